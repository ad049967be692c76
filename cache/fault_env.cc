#include "cache/fault_env.h"

#include <cerrno>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cache/mutex_lock.h"

namespace jitgemm::cache {

// Wraps the base env's file, applying the write-side faults as data arrives.
class FaultWritableFile : public WritableFile {
 public:
  FaultWritableFile(FaultEnv* env, std::string path, std::unique_ptr<WritableFile> base)
      : env_(env), path_(std::move(path)), base_(std::move(base)) {}

  absl::Status Append(absl::string_view data) override {
    absl::Status s = env_->Check(FaultOp::kAppend, path_);
    if (!s.ok()) return s;
    uint64_t limit, truncate_at;
    int error;
    {
      MutexLock lock(&env_->mu_);
      limit = env_->append_limit_;
      error = env_->append_error_;
      truncate_at = env_->truncate_at_;
    }
    if (env_->crash_pending(CrashPoint::kMidWrite)) {
      base_->Append(data.substr(0, data.size() / 2)).IgnoreError();
      env_->MaybeCrash(CrashPoint::kMidWrite);
      return absl::AbortedError("simulated crash mid-write");
    }
    absl::string_view keep = data;
    if (truncate_at != UINT64_MAX) {
      keep = keep.substr(0, written_ >= truncate_at ? 0 : truncate_at - written_);
    }
    bool fail = false;
    if (limit != UINT64_MAX && written_ + keep.size() > limit) {
      keep = keep.substr(0, written_ >= limit ? 0 : limit - written_);
      fail = true;
    }
    s = base_->Append(keep);
    written_ += keep.size();
    if (!s.ok()) return s;
    if (fail) return ErrnoToStatus(error, absl::StrCat("write '", path_, "' (injected)"));
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    absl::Status s = env_->Check(FaultOp::kSync, path_);
    return s.ok() ? base_->Sync() : s;
  }

  absl::Status Close() override {
    absl::Status s = env_->Check(FaultOp::kClose, path_);
    absl::Status closed = base_->Close();  // the descriptor goes either way
    return s.ok() ? closed : s;
  }

 private:
  FaultEnv* const env_;
  const std::string path_;
  std::unique_ptr<WritableFile> base_;
  uint64_t written_ = 0;
};

FaultEnv::FaultEnv(Env* base) : base_(base) {}

void FaultEnv::FailOp(FaultOp op, int error, int times, std::string path_part) {
  MutexLock lock(&mu_);
  rules_.push_back(Rule{op, error, times, std::move(path_part)});
}

void FaultEnv::FailAppendAfter(uint64_t bytes, int error) {
  MutexLock lock(&mu_);
  append_limit_ = bytes;
  append_error_ = error;
}

void FaultEnv::TruncateWritesAt(uint64_t bytes) {
  MutexLock lock(&mu_);
  truncate_at_ = bytes;
}

void FaultEnv::SetReadOnly(bool read_only) {
  MutexLock lock(&mu_);
  read_only_ = read_only;
}

void FaultEnv::CrashAt(CrashPoint point, std::function<void()> on_crash) {
  MutexLock lock(&mu_);
  crash_at_ = point;
  on_crash_ = std::move(on_crash);
}

void FaultEnv::ClearFaults() {
  MutexLock lock(&mu_);
  rules_.clear();
  append_limit_ = UINT64_MAX;
  truncate_at_ = UINT64_MAX;
  read_only_ = false;
  crash_at_ = CrashPoint::kNone;
  on_crash_ = nullptr;
}

bool FaultEnv::crashed() const {
  MutexLock lock(&mu_);
  return crashed_;
}

int FaultEnv::calls(FaultOp op) const {
  MutexLock lock(&mu_);
  return calls_[static_cast<int>(op)];
}

bool FaultEnv::crash_pending(CrashPoint point) const {
  MutexLock lock(&mu_);
  return !crashed_ && crash_at_ == point;
}

bool FaultEnv::MaybeCrash(CrashPoint point) {
  std::function<void()> hook;
  {
    MutexLock lock(&mu_);
    if (crashed_ || crash_at_ != point) return false;
    crashed_ = true;
    hook = on_crash_;
  }
  if (hook) hook();
  return true;
}

absl::Status FaultEnv::Check(FaultOp op, const std::string& path) {
  MutexLock lock(&mu_);
  ++calls_[static_cast<int>(op)];
  if (crashed_) return absl::AbortedError(absl::StrCat("process is dead (simulated): ", path));
  for (auto it = rules_.begin(); it != rules_.end(); ++it) {
    if (it->op != op || it->times == 0 || !absl::StrContains(path, it->path_part)) continue;
    int error = it->error;
    if (it->times > 0 && --it->times == 0) rules_.erase(it);
    return ErrnoToStatus(error, absl::StrCat("'", path, "' (injected)"));
  }
  bool mutating = op == FaultOp::kCreate || op == FaultOp::kRename || op == FaultOp::kRemove ||
                  op == FaultOp::kSetModTime || op == FaultOp::kLock;
  if (read_only_ && mutating) {
    return ErrnoToStatus(EROFS, absl::StrCat("'", path, "' (injected)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> FaultEnv::ReadFile(const std::string& path, uint64_t max_bytes) {
  absl::Status s = Check(FaultOp::kRead, path);
  if (!s.ok()) return s;
  return base_->ReadFile(path, max_bytes);
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultEnv::NewWritableFile(const std::string& path) {
  absl::Status s = Check(FaultOp::kCreate, path);
  if (!s.ok()) return s;
  absl::StatusOr<std::unique_ptr<WritableFile>> file = base_->NewWritableFile(path);
  if (!file.ok()) return file;
  if (MaybeCrash(CrashPoint::kTempCreated)) {
    return absl::AbortedError("simulated crash after creating the temp file");
  }
  return std::make_unique<FaultWritableFile>(this, path, std::move(file).value());
}

absl::Status FaultEnv::RenameFile(const std::string& from, const std::string& to) {
  if (MaybeCrash(CrashPoint::kBeforeRename)) {
    return absl::AbortedError("simulated crash before rename");
  }
  absl::Status s = Check(FaultOp::kRename, from);
  return s.ok() ? base_->RenameFile(from, to) : s;
}

absl::Status FaultEnv::RemoveFile(const std::string& path) {
  absl::Status s = Check(FaultOp::kRemove, path);
  return s.ok() ? base_->RemoveFile(path) : s;
}

absl::StatusOr<std::vector<std::string>> FaultEnv::ListDir(const std::string& dir) {
  absl::Status s = Check(FaultOp::kListDir, dir);
  if (!s.ok()) return s;
  return base_->ListDir(dir);
}

absl::StatusOr<FileInfo> FaultEnv::Stat(const std::string& path) {
  absl::Status s = Check(FaultOp::kStat, path);
  if (!s.ok()) return s;
  return base_->Stat(path);
}

absl::StatusOr<std::vector<FileInfo>> FaultEnv::StatUnder(const std::string& root,
                                                          absl::string_view relative) {
  absl::Status s = Check(FaultOp::kStat, root);
  if (!s.ok()) return s;
  return base_->StatUnder(root, relative);
}

absl::Status FaultEnv::CreateDirs(const std::string& path) {
  absl::Status s = Check(FaultOp::kCreateDirs, path);
  if (!s.ok()) return s;
  bool read_only;
  {
    MutexLock lock(&mu_);
    read_only = read_only_;
  }
  if (read_only) {
    // mkdir -p of something that exists succeeds even on a read-only mount.
    absl::StatusOr<FileInfo> info = base_->Stat(path);
    if (info.ok() && info->is_directory) return absl::OkStatus();
    return ErrnoToStatus(EROFS, absl::StrCat("mkdir '", path, "' (injected)"));
  }
  return base_->CreateDirs(path);
}

absl::Status FaultEnv::SetModTime(const std::string& path, absl::Time time) {
  absl::Status s = Check(FaultOp::kSetModTime, path);
  return s.ok() ? base_->SetModTime(path, time) : s;
}

absl::Status FaultEnv::SyncDir(const std::string& dir) {
  absl::Status s = Check(FaultOp::kSyncDir, dir);
  return s.ok() ? base_->SyncDir(dir) : s;
}

bool FaultEnv::IsWritableDir(const std::string& dir) {
  {
    MutexLock lock(&mu_);
    if (read_only_ || crashed_) return false;
  }
  return base_->IsWritableDir(dir);
}

absl::StatusOr<std::unique_ptr<FileLock>> FaultEnv::TryLockFile(const std::string& path) {
  absl::Status s = Check(FaultOp::kLock, path);
  if (!s.ok()) return s;
  return base_->TryLockFile(path);
}

}  // namespace jitgemm::cache
