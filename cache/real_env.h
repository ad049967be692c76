// RealEnv: Env over the POSIX filesystem (open/read/fsync/rename/flock).
//
// Thread safety: stateless apart from the random-name counter, which is
// atomic; all methods may be called concurrently.
#ifndef JITGEMM_CACHE_REAL_ENV_H_
#define JITGEMM_CACHE_REAL_ENV_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cache/env.h"

namespace jitgemm::cache {

class RealEnv : public Env {
 public:
  RealEnv();

  absl::StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  absl::Status RenameFile(const std::string& from, const std::string& to) override;
  absl::Status RemoveFile(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override;
  absl::StatusOr<FileInfo> Stat(const std::string& path) override;
  absl::StatusOr<std::vector<FileInfo>> StatUnder(const std::string& root,
                                                  absl::string_view relative) override;
  absl::StatusOr<std::vector<ChildInfo>> StatChildren(const std::string& root,
                                                      absl::string_view relative) override;
  absl::Status CreateDirs(const std::string& path) override;
  absl::Status SetModTime(const std::string& path, absl::Time time) override;
  absl::Status SyncDir(const std::string& dir) override;
  bool IsWritableDir(const std::string& dir) override;
  absl::StatusOr<std::unique_ptr<FileLock>> TryLockFile(const std::string& path) override;
  int ProcessId() override;
  uint64_t RandomBits() override;

 private:
  const uint64_t seed_;
  std::atomic<uint64_t> counter_{0};
};

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_REAL_ENV_H_
