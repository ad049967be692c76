// FaultEnv: an Env over another Env (usually the real one, on a test
// directory) that injects the failures a shared cache must survive: an errno
// on any operation, ENOSPC/EDQUOT part-way through a write, a disk that
// silently keeps only part of a file, a read-only filesystem, and a crash
// of the writing process at each step of publishing an entry.
//
// A simulated crash leaves the files exactly as a dead process would: the
// step before the crash point has happened, and from then on the env is
// "dead": every call fails with Aborted and changes nothing, so the code
// under test cannot clean up after itself. A test can instead pass a hook
// (the crash worker raises SIGKILL to die for real).
//
// Thread safety: all methods may be called concurrently.
//
// Example:
//   FaultEnv env(Env::Default());
//   env.FailAppendAfter(100, ENOSPC);
//   auto cache = DiskCache::Open(settings, &env);
//   cache->Store(key, EntryKind::kCubin, payload);  // counted failure, no temp left
#ifndef JITGEMM_CACHE_FAULT_ENV_H_
#define JITGEMM_CACHE_FAULT_ENV_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "cache/env.h"

namespace jitgemm::cache {

enum class FaultOp {
  kRead,
  kCreate,  // NewWritableFile
  kAppend,
  kSync,
  kClose,
  kRename,
  kRemove,
  kListDir,
  kStat,
  kCreateDirs,
  kSetModTime,
  kSyncDir,
  kLock,  // TryLockFile
  kNumOps,
};

enum class CrashPoint {
  kNone,
  kTempCreated,   // the temp file exists, empty
  kMidWrite,      // half of the first Append's data is written
  kBeforeRename,  // the temp file is complete and synced, not yet renamed
};

class FaultEnv : public Env {
 public:
  explicit FaultEnv(Env* base);

  // The next `times` calls of `op` (all of them if `times` < 0) whose path
  // contains `path_part` fail with `error` and do nothing.
  void FailOp(FaultOp op, int error, int times = -1, std::string path_part = "");
  // Each file accepts `bytes` bytes; the Append that crosses that point
  // writes up to it and fails with `error` (ENOSPC mid-write).
  void FailAppendAfter(uint64_t bytes, int error);
  // Each file silently keeps only its first `bytes` bytes; appends report
  // success. Models a filesystem that loses data (and a truncated copy).
  void TruncateWritesAt(uint64_t bytes);
  // Mutating calls fail with EROFS and IsWritableDir is false.
  void SetReadOnly(bool read_only);
  // Dies at the first time `point` is reached. `on_crash` runs instead of
  // the default (going dead) if given.
  void CrashAt(CrashPoint point, std::function<void()> on_crash = nullptr);
  void ClearFaults();

  bool crashed() const;
  // How many times `op` was called (failed or not).
  int calls(FaultOp op) const;

  absl::StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  absl::Status RenameFile(const std::string& from, const std::string& to) override;
  absl::Status RemoveFile(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override;
  absl::StatusOr<FileInfo> Stat(const std::string& path) override;
  absl::StatusOr<std::vector<FileInfo>> StatUnder(const std::string& root,
                                                  absl::string_view relative) override;
  absl::Status CreateDirs(const std::string& path) override;
  absl::Status SetModTime(const std::string& path, absl::Time time) override;
  absl::Status SyncDir(const std::string& dir) override;
  bool IsWritableDir(const std::string& dir) override;
  absl::StatusOr<std::unique_ptr<FileLock>> TryLockFile(const std::string& path) override;
  absl::Time Now() override { return base_->Now(); }
  int ProcessId() override { return base_->ProcessId(); }
  uint64_t RandomBits() override { return base_->RandomBits(); }

 private:
  friend class FaultWritableFile;

  struct Rule {
    FaultOp op;
    int error;
    int times;
    std::string path_part;
  };

  // Counts the call; OK, or the injected failure (Aborted once dead).
  absl::Status Check(FaultOp op, const std::string& path);
  // Whether `point` is armed and not yet reached.
  bool crash_pending(CrashPoint point) const;
  // True (and the crash performed) if `point` is the armed crash point.
  bool MaybeCrash(CrashPoint point);

  Env* const base_;
  mutable absl::Mutex mu_;
  std::vector<Rule> rules_ ABSL_GUARDED_BY(mu_);
  uint64_t append_limit_ ABSL_GUARDED_BY(mu_) = UINT64_MAX;
  int append_error_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t truncate_at_ ABSL_GUARDED_BY(mu_) = UINT64_MAX;
  bool read_only_ ABSL_GUARDED_BY(mu_) = false;
  CrashPoint crash_at_ ABSL_GUARDED_BY(mu_) = CrashPoint::kNone;
  std::function<void()> on_crash_ ABSL_GUARDED_BY(mu_);
  bool crashed_ ABSL_GUARDED_BY(mu_) = false;
  int calls_[static_cast<int>(FaultOp::kNumOps)] ABSL_GUARDED_BY(mu_) = {};
};

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_FAULT_ENV_H_
