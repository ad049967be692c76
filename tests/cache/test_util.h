// Helpers shared by the cache tests: a scratch directory, file helpers, and a
// StatusIs matcher (GoogleTest 1.12 ships none for absl::Status).
#ifndef JITGEMM_TESTS_CACHE_TEST_UTIL_H_
#define JITGEMM_TESTS_CACHE_TEST_UTIL_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cache/settings.h"
#include "gmock/gmock.h"

namespace jitgemm::cache::testing {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <class T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

MATCHER_P2(StatusIs, code, message_matcher,
           absl::StrCat("has code ", absl::StatusCodeToString(code))) {
  const absl::Status& s = GetStatus(arg);
  *result_listener << "status is " << s.ToString();
  return s.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(s.message()), result_listener);
}

MATCHER(IsOk, "is OK") {
  const absl::Status& s = GetStatus(arg);
  *result_listener << "status is " << s.ToString();
  return s.ok();
}

// A fresh directory under $TEST_TMPDIR or /tmp, removed with its contents
// when the object goes away (after making everything writable again).
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Settings for a private read-write cache at `root` with the environment
// ignored.
CacheSettings TestSettings(const std::string& root);

std::string ReadBytes(const std::string& path);
void WriteBytes(const std::string& path, const std::string& bytes);
bool Exists(const std::string& path);
void SetMtime(const std::string& path, absl::Time time);
// Regular files under `dir`, as paths relative to it, sorted.
std::vector<std::string> FilesUnder(const std::string& dir);
// Relative paths of the cache entries under the root `root`, as the cache
// lists them (read-only use; none where it cannot).
std::set<std::string> EntriesUnder(const std::string& root);
// Files under `dir` whose name matches the temp-file pattern.
std::vector<std::string> TempFilesUnder(const std::string& dir);
// chmod -R on `dir` (directories get the x bits of `mode` as well).
void ChmodTree(const std::string& dir, unsigned mode);

// Deterministic payload of `size` bytes derived from `seed`: what a compile
// of that key would produce, identical in every process.
std::string PayloadFor(const std::string& seed, size_t size);

}  // namespace jitgemm::cache::testing

#endif  // JITGEMM_TESTS_CACHE_TEST_UTIL_H_
