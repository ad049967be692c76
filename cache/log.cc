#include "cache/log.h"

#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace jitgemm::cache {

void LogCacheWarning(absl::string_view message) {
  std::string line = absl::StrCat("jitgemm cache: ", message, "\n");
  absl::string_view rest = line;
  while (!rest.empty()) {
    ssize_t n = ::write(STDERR_FILENO, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere left to report to
    rest.remove_prefix(static_cast<size_t>(n));
  }
}

std::string QuotedForHumans(absl::string_view text) {
  return absl::StrCat("'", absl::CHexEscape(text), "'");
}

}  // namespace jitgemm::cache
