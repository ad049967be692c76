// DiskCache's whole-directory operations: eviction, temp-file cleanup, usage
// and verification. They walk the writable root and touch no in-flight state.
#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "cache/disk_cache.h"
#include "cache/layout.h"
#include "cache/log.h"
#include "cache/mutex_lock.h"
#include "cache/shard_walk.h"

namespace jitgemm::cache {
absl::StatusOr<std::vector<EntryFileInfo>> DiskCache::ListEntries() {
  if (!root_readable_) {
    return absl::FailedPreconditionError(absl::StrCat("no usable cache root ('", root_, "')"));
  }
  if (distrusted_.load()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cache directory ", QuotedForHumans(root_), " is no longer trusted"));
  }
  return ListEntryFiles(env_, root_, RootUse::kWritable);
}

absl::StatusOr<CacheUsage> DiskCache::Usage() {
  absl::StatusOr<std::vector<EntryFileInfo>> entries = ListEntries();
  if (!entries.ok()) return entries.status();
  CacheUsage usage;
  for (const EntryFileInfo& e : *entries) {
    ++usage.entries;
    usage.bytes += e.size;
  }
  return usage;
}

absl::Status DiskCache::Prune(uint64_t max_bytes) {
  MutexLock lock(&prune_mu_);
  return PruneLocked(max_bytes);
}

absl::Status DiskCache::PruneLocked(uint64_t max_bytes) {
  if (mode_ != CacheMode::kReadWrite) {
    return absl::FailedPreconditionError(
        absl::StrCat("cache '", root_, "' is ", CacheModeName(mode_), ", not readwrite"));
  }
  absl::StatusOr<std::vector<EntryFileInfo>> entries = ListEntries();
  if (!entries.ok()) return entries.status();
  uint64_t total = 0;
  for (const EntryFileInfo& e : *entries) total += e.size;
  // Oldest first; the path breaks ties so the order is the same every time.
  std::sort(entries->begin(), entries->end(), [](const EntryFileInfo& a, const EntryFileInfo& b) {
    return std::tie(a.mtime, a.path) < std::tie(b.mtime, b.path);
  });
  absl::Status first_error = absl::OkStatus();
  for (const EntryFileInfo& e : *entries) {
    if (total <= max_bytes) break;
    absl::Status removed = env_->RemoveFile(e.path);
    if (removed.ok()) {
      evictions_.fetch_add(1);
    } else if (!absl::IsNotFound(removed)) {
      if (first_error.ok()) first_error = removed;
      continue;
    }
    total -= e.size;
  }
  usage_bytes_ = total;
  usage_known_ = true;
  if (total > max_bytes && !first_error.ok()) return first_error;
  return absl::OkStatus();
}

void DiskCache::AfterStore(uint64_t bytes) {
  MutexLock lock(&prune_mu_);
  if (!usage_known_) {
    // One walk per process, at its first store, instead of one at Open:
    // processes that only read never pay for it. The walk already sees the
    // entry just stored.
    absl::StatusOr<CacheUsage> usage = Usage();
    if (!usage.ok()) return;
    // The same once-per-process moment clears what crashed writers left.
    CleanTempFiles(absl::Hours(1));
    usage_bytes_ = usage->bytes;
    usage_known_ = true;
  } else {
    usage_bytes_ += bytes;
  }
  if (usage_bytes_ <= settings_.max_bytes) return;
  // Prune below the cap (to 90%), so the next few stores do not each walk
  // the whole cache again.
  PruneLocked(settings_.max_bytes - settings_.max_bytes / 10).IgnoreError();
}

void DiskCache::CleanTempFiles(absl::Duration older_than) {
  if (mode_ != CacheMode::kReadWrite || distrusted_.load()) return;
  const absl::Time cutoff = env_->Now() - older_than;
  auto old_enough = [&](const std::string& path) {
    absl::StatusOr<FileInfo> info = env_->Stat(path);
    return info.ok() && info->is_regular && info->mtime < cutoff;
  };
  ForEachShard(env_, root_, RootUse::kWritable,
               [&](EntryKind, const std::string& dir, const std::vector<std::string>& names) {
                 for (const std::string& name : names) {
                   if (!IsTempFileName(name)) continue;
                   std::string path = JoinPath(dir, name);
                   if (old_enough(path)) env_->RemoveFile(path).IgnoreError();
                 }
               })
      .IgnoreError();
  if (!LockDirTrusted()) return;
  absl::StatusOr<std::vector<std::string>> locks = env_->ListDir(LockDir(root_));
  if (!locks.ok()) return;
  for (const std::string& name : *locks) {
    if (!IsLockFileName(name)) continue;
    std::string path = JoinPath(LockDir(root_), name);
    if (!old_enough(path)) continue;
    // Only a lock nobody holds is removed, and by taking it: releasing a
    // lock (here, destroying it at once) unlinks its file, which is safe
    // against every other locker. A held lock fails to lock and stays.
    env_->TryLockFile(path).IgnoreError();
  }
}

absl::StatusOr<VerifyReport> DiskCache::Verify(bool remove_corrupt) {
  absl::StatusOr<std::vector<EntryFileInfo>> entries = ListEntries();
  if (!entries.ok()) return entries.status();
  VerifyReport report;
  for (const EntryFileInfo& e : *entries) {
    ++report.entries;
    absl::StatusOr<std::string> bytes = env_->ReadFile(e.path, kMaxEntryFileBytes);
    if (absl::IsNotFound(bytes.status())) continue;
    bool ok = false;
    if (bytes.ok() && e.untrusted.empty()) {
      absl::StatusOr<EntryView> view = ParseEntry(*bytes);
      // The file must be where its own key text says it belongs.
      ok = view.ok() && view->kind == e.kind &&
           EntryRelativePath(e.kind, MakeCacheKey(std::string(view->key_text))) == e.relative_path;
    }
    if (ok) {
      ++report.valid;
      continue;
    }
    report.corrupt.push_back(e.path);
    if (remove_corrupt && mode_ == CacheMode::kReadWrite) env_->RemoveFile(e.path).IgnoreError();
  }
  return report;
}

}  // namespace jitgemm::cache
