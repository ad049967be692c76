#include "cache/settings.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cache/env.h"
#include "cache/log.h"

namespace jitgemm::cache {
namespace {

std::optional<CacheMode> ParseMode(absl::string_view text) {
  std::string v = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  if (v == "off" || v == "0" || v == "false" || v == "no") return CacheMode::kOff;
  if (v == "readonly" || v == "read-only" || v == "ro") return CacheMode::kReadOnly;
  if (v == "readwrite" || v == "read-write" || v == "rw" || v == "on" || v == "1" || v == "true" ||
      v == "yes") {
    return CacheMode::kReadWrite;
  }
  return std::nullopt;
}

std::optional<uint64_t> ParseBytes(absl::string_view text) {
  std::string v = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  absl::string_view digits = v;
  int shift = 0;
  for (absl::string_view suffix : {"IB", "B"}) {
    if (absl::EndsWith(digits, suffix) && digits.size() > suffix.size()) {
      digits.remove_suffix(suffix.size());
      break;
    }
  }
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
      default:
        break;
    }
    if (shift != 0) digits.remove_suffix(1);
  }
  uint64_t value = 0;
  if (!absl::SimpleAtoi(digits, &value)) return std::nullopt;
  if (value > (std::numeric_limits<uint64_t>::max() >> shift)) return std::nullopt;
  return value << shift;
}

std::string HomeFromPasswd() {
  struct passwd pw;
  struct passwd* result = nullptr;
  std::string buffer(16384, '\0');
  if (getpwuid_r(geteuid(), &pw, buffer.data(), buffer.size(), &result) != 0 || result == nullptr ||
      pw.pw_dir == nullptr) {
    return "";
  }
  return pw.pw_dir;
}

}  // namespace

const char* CacheModeName(CacheMode mode) {
  switch (mode) {
    case CacheMode::kOff:
      return "off";
    case CacheMode::kReadOnly:
      return "readonly";
    case CacheMode::kReadWrite:
      return "readwrite";
  }
  return "unknown";
}

std::optional<std::string> GetProcessEnv(absl::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::string DefaultCacheRoot(const GetEnvFunction& getenv) {
  // A relative root would name a different cache in every working directory.
  std::optional<std::string> dir = getenv("JITGEMM_CACHE_DIR");
  if (dir && !dir->empty() && dir->front() == '/') return *dir;
  std::optional<std::string> xdg = getenv("XDG_CACHE_HOME");
  if (xdg && !xdg->empty() && xdg->front() == '/') return JoinPath(*xdg, "jitgemm");
  std::optional<std::string> home = getenv("HOME");
  std::string h = home && !home->empty() ? *home : HomeFromPasswd();
  if (h.empty()) return "";
  return JoinPath(JoinPath(h, ".cache"), "jitgemm");
}

CacheSettings SettingsFromVariables(const GetEnvFunction& getenv) {
  CacheSettings s;
  s.root = DefaultCacheRoot(getenv);
  if (std::optional<std::string> v = getenv("JITGEMM_CACHE_DIR");
      v && !v->empty() && v->front() != '/') {
    s.problems.push_back(absl::StrCat("JITGEMM_CACHE_DIR=", QuotedForHumans(*v),
                                      " is not an absolute path; using ",
                                      s.root.empty() ? "no directory" : QuotedForHumans(s.root)));
  }
  if (std::optional<std::string> v = getenv("JITGEMM_CACHE"); v && !v->empty()) {
    if (std::optional<CacheMode> mode = ParseMode(*v)) {
      s.mode = *mode;
    } else {
      s.problems.push_back(absl::StrCat("JITGEMM_CACHE='", *v,
                                        "' is not off, readonly or readwrite; using readwrite"));
    }
  }
  if (std::optional<std::string> v = getenv("JITGEMM_CACHE_READONLY_DIRS")) {
    for (absl::string_view dir : absl::StrSplit(*v, ':', absl::SkipEmpty())) {
      s.readonly_roots.emplace_back(dir);
    }
  }
  if (std::optional<std::string> v = getenv("JITGEMM_CACHE_TRUSTED_KEYS")) {
    for (absl::string_view file : absl::StrSplit(*v, ':', absl::SkipEmpty())) {
      s.trusted_keys.emplace_back(file);
    }
  }
  if (std::optional<std::string> v = getenv("JITGEMM_CACHE_MAX_BYTES"); v && !v->empty()) {
    if (std::optional<uint64_t> bytes = ParseBytes(*v)) {
      s.max_bytes = *bytes;
    } else {
      s.problems.push_back(absl::StrCat("JITGEMM_CACHE_MAX_BYTES='", *v,
                                        "' is not a byte count; using ", kDefaultMaxBytes));
    }
  }
  if (std::optional<std::string> v = getenv("JITGEMM_CACHE_LOCK_TIMEOUT_S"); v && !v->empty()) {
    double seconds = 0;
    if (absl::SimpleAtod(*v, &seconds) && seconds >= 0 && seconds < 1e9) {
      s.lock_timeout = absl::Seconds(seconds);
    } else {
      s.problems.push_back(absl::StrCat("JITGEMM_CACHE_LOCK_TIMEOUT_S='", *v,
                                        "' is not a number of seconds; using 120"));
    }
  }
  s.remote = RemoteSettingsFromVariables(getenv);
  s.problems.insert(s.problems.end(), s.remote.problems.begin(), s.remote.problems.end());
  return s;
}

CacheSettings CacheSettings::FromEnvironment() { return SettingsFromVariables(GetProcessEnv); }

}  // namespace jitgemm::cache
