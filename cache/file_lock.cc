#include "cache/file_lock.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"

namespace jitgemm::cache {

absl::StatusOr<std::unique_ptr<FileLock>> AcquireFileLock(Env* env, const std::string& path,
                                                          absl::Duration timeout, bool* waited) {
  if (waited != nullptr) *waited = false;
  // Waiting is timed on the monotonic clock so a clock step cannot stretch it.
  const auto start = std::chrono::steady_clock::now();
  absl::Duration pause = absl::Milliseconds(1);
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<std::unique_ptr<FileLock>> lock = env->TryLockFile(path);
    if (lock.ok() || !absl::IsUnavailable(lock.status())) return lock;
    if (attempt == 0 && waited != nullptr) *waited = true;
    absl::Duration elapsed = absl::FromChrono(std::chrono::steady_clock::now() - start);
    if (elapsed >= timeout) {
      return absl::DeadlineExceededError(
          absl::StrCat("gave up waiting for '", path, "' after ", absl::FormatDuration(elapsed)));
    }
    absl::SleepFor(std::min(pause, timeout - elapsed));
    pause = std::min(pause * 2, absl::Milliseconds(25));
  }
}

}  // namespace jitgemm::cache
