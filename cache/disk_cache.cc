#include "cache/disk_cache.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "cache/file_lock.h"
#include "cache/folder_trust.h"
#include "cache/layout.h"
#include "cache/log.h"

namespace jitgemm::cache {
namespace {

std::string FlightKey(const CacheKey& key, EntryKind kind) {
  // The full text, not the hash: threads never share a result across texts,
  // even under a hash collision.
  return absl::StrCat(static_cast<int>(kind), ":", key.text);
}

}  // namespace

DiskCache::DiskCache(CacheSettings settings, Env* env) : env_(env), settings_(std::move(settings)) {
  root_ = settings_.root.empty() ? DefaultCacheRoot(GetProcessEnv) : settings_.root;
}

std::shared_ptr<DiskCache> DiskCache::Open(CacheSettings settings, Env* env) {
  std::shared_ptr<DiskCache> cache(new DiskCache(std::move(settings), env));
  cache->CheckRoots();
  cache->remote_ = RemoteTier::Open(cache->settings_.remote);
  return cache;
}

std::shared_ptr<DiskCache> DiskCache::Default() {
  // Leaked on purpose: kernels may be looked up from static destructors.
  static const std::shared_ptr<DiskCache>* const cache =
      new std::shared_ptr<DiskCache>(Open(CacheSettings::FromEnvironment()));
  return *cache;
}

CacheCounters DiskCache::counters() const {
  CacheCounters c;
  c.hits = hits_.load();
  c.misses = misses_.load();
  c.shared = shared_.load();
  c.compiles = compiles_.load();
  c.stores = stores_.load();
  c.corrupt = corrupt_.load();
  c.evictions = evictions_.load();
  c.lock_waits = lock_waits_.load();
  c.store_failures = store_failures_.load();
  c.remote_hits = remote_hits_.load();
  return c;
}

size_t DiskCache::Waiters(const CacheKey& key, EntryKind kind) const {
  return flights_.Joined(FlightKey(key, kind));
}

void DiskCache::WarnOnce(std::atomic<bool>* flag, absl::string_view message) {
  if (!flag->exchange(true)) LogCacheWarning(message);
}

std::optional<std::string> DiskCache::Lookup(const CacheKey& key, EntryKind kind) {
  std::optional<std::string> found = Find(key, kind);
  if (!found) found = FetchRemote(key, kind);
  (found ? hits_ : misses_).fetch_add(1);
  return found;
}

std::optional<std::string> DiskCache::Find(const CacheKey& key, EntryKind kind) {
  if (mode_ == CacheMode::kOff) return std::nullopt;
  for (const std::string& ro : readonly_roots_) {
    if (std::optional<std::string> found = ReadTier(ro, false, key, kind)) return found;
  }
  if (!root_readable_ || distrusted_.load()) return std::nullopt;
  return ReadTier(root_, mode_ == CacheMode::kReadWrite, key, kind);
}

std::optional<std::string> DiskCache::ReadTier(const std::string& root, bool writable,
                                               const CacheKey& key, EntryKind kind) {
  const std::string path = EntryPath(root, kind, key);
  const std::string relative = EntryRelativePath(kind, key);
  // Every folder on the way is checked again at each read: the check at Open
  // does not stop a folder from being swapped for a link later.
  absl::StatusOr<std::vector<FileInfo>> infos;
  if (root == root_) {
    std::vector<FileInfo> found;
    if (!WritableRootTrusted(relative, /*last_is_file=*/true, &found)) return std::nullopt;
    infos = std::move(found);
  } else {
    infos = CheckTrustedFolders(env_, root, relative, RootUse::kReadOnly, /*last_is_file=*/true);
    if (!infos.ok()) {
      WarnOnce(&readonly_distrust_warned_,
               absl::StrCat("skipping read-only cache root ", QuotedForHumans(root), ": ",
                            infos.status().message()));
      return std::nullopt;
    }
  }
  if (infos->size() != 5) return std::nullopt;  // no such entry (or folder): a miss
  absl::Status trusted = CheckTrustedFile(
      infos->back(), path, writable || root == root_ ? RootUse::kWritable : RootUse::kReadOnly,
      infos->front().uid);
  absl::StatusOr<std::string> bytes = trusted.ok() ? env_->ReadFile(path, kMaxEntryFileBytes)
                                                   : absl::StatusOr<std::string>(trusted);
  if (!bytes.ok() && !absl::IsOutOfRange(bytes.status()) &&
      !absl::IsFailedPrecondition(bytes.status())) {
    // Absent (or evicted a moment ago), or unreadable for a reason that is
    // not the entry's fault: a plain miss.
    return std::nullopt;
  }
  // Too large, not a regular file, another user's, or failing DecodeEntry:
  // corrupt.
  absl::StatusOr<std::string> payload =
      bytes.ok() ? DecodeEntry(*bytes, key, kind) : absl::StatusOr<std::string>(bytes.status());
  if (payload.ok() && root != root_) payload = CheckListed(root, relative, *bytes, payload);
  if (!payload.ok()) {
    corrupt_.fetch_add(1);
    WarnOnce(&corrupt_warned_,
             absl::StrCat("rejected cache entry ", QuotedForHumans(path), " (",
                          payload.status().message(), "); it is treated as a miss",
                          writable ? " and replaced" : ""));
    // Removing it lets the rebuilt entry take its place. Another process may
    // have replaced it with a good one since we read it; losing that costs
    // one compile, never a wrong result.
    if (writable) env_->RemoveFile(path).IgnoreError();
    return std::nullopt;
  }
  // The mtime is the LRU clock for Prune.
  if (writable) env_->SetModTime(path, env_->Now()).IgnoreError();
  return std::move(payload).value();
}

std::optional<std::string> DiskCache::FetchRemote(const CacheKey& key, EntryKind kind) {
  if (remote_ == nullptr) return std::nullopt;
  std::optional<std::string> found = remote_->Fetch(key, kind);
  if (found) {
    remote_hits_.fetch_add(1);
    StoreLocal(key, kind, *found);
  }
  return found;
}

void DiskCache::Store(const CacheKey& key, EntryKind kind, std::string_view payload) {
  StoreLocal(key, kind, payload);
  if (remote_ != nullptr) remote_->Publish(key, kind, payload);
}

void DiskCache::StoreLocal(const CacheKey& key, EntryKind kind, std::string_view payload) {
  if (mode_ != CacheMode::kReadWrite || distrusted_.load()) return;
  absl::StatusOr<uint64_t> written = Publish(key, kind, payload);
  if (written.ok()) {
    if (*written > 0) {
      stores_.fetch_add(1);
      AfterStore(*written);
    }
    return;
  }
  store_failures_.fetch_add(1);
  WarnOnce(&store_warned_,
           absl::StrCat("could not store a cache entry under '", root_, "' (",
                        written.status().message(),
                        "); continuing without it. Later store failures are only counted."));
}

absl::StatusOr<uint64_t> DiskCache::Publish(const CacheKey& key, EntryKind kind,
                                            std::string_view payload) {
  const std::string bytes = EncodeEntry(key, kind, payload);
  if (bytes.size() > kMaxEntryFileBytes) {
    // No reader would accept it; don't fill the disk with it.
    return absl::ResourceExhaustedError(absl::StrCat(
        "entry of ", bytes.size(), " bytes exceeds the limit of ", kMaxEntryFileBytes));
  }
  const std::string dir = ShardDir(root_, kind, key);
  const std::string path = EntryPath(root_, kind, key);
  // The shard folder (or a folder above it) may have become a link since
  // Open; mkdir -p and the temp file would follow it out of the root.
  const std::string shard = EntryRelativePath(kind, key);
  if (!WritableRootTrusted(shard.substr(0, shard.rfind('/')), false, nullptr)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cache directory ", QuotedForHumans(root_), " is no longer trusted"));
  }
  absl::Status status = env_->CreateDirs(dir);
  if (!status.ok()) return status;
  const std::string temp = TempPath(root_, kind, key, env_->ProcessId(), env_->RandomBits());
  absl::StatusOr<std::unique_ptr<WritableFile>> file = env_->NewWritableFile(temp);
  if (!file.ok()) return file.status();
  status = (*file)->Append(bytes);
  // fsync before rename: otherwise a power cut can publish the name of a file
  // whose data never reached the disk.
  if (status.ok()) status = (*file)->Sync();
  absl::Status closed = (*file)->Close();
  if (status.ok()) status = closed;
  if (status.ok()) {
    status = env_->RenameFile(temp, path);
    if (!status.ok()) {
      // EXDEV / EBUSY and the like: if another writer's entry is in place
      // and sound, the goal is met.
      absl::StatusOr<std::string> existing = env_->ReadFile(path, kMaxEntryFileBytes);
      if (existing.ok() && DecodeEntry(*existing, key, kind).ok()) {
        env_->RemoveFile(temp).IgnoreError();
        return 0;
      }
    }
  }
  if (!status.ok()) {
    env_->RemoveFile(temp).IgnoreError();
    return status;
  }
  // Make the rename itself durable; failure here leaves a valid entry that a
  // power cut might undo, which is only a future miss.
  env_->SyncDir(dir).IgnoreError();
  return bytes.size();
}

absl::StatusOr<std::unique_ptr<FileLock>> DiskCache::LockKey(const CacheKey& key, EntryKind kind) {
  const std::string path = LockPath(root_, kind, key);
  if (!LockDirTrusted()) return absl::FailedPreconditionError("the lock folder is not trusted");
  bool waited = false;
  absl::StatusOr<std::unique_ptr<FileLock>> lock =
      AcquireFileLock(env_, path, settings_.lock_timeout, &waited);
  if (absl::IsNotFound(lock.status())) {
    // The lock directory was removed under us (rm -rf of the cache): remake
    // it once.
    if (env_->CreateDirs(LockDir(root_)).ok()) {
      lock = AcquireFileLock(env_, path, settings_.lock_timeout, &waited);
    }
  }
  if (waited) lock_waits_.fetch_add(1);
  if (absl::IsDeadlineExceeded(lock.status())) {
    WarnOnce(&lock_timeout_warned_,
             absl::StrCat("another process has held the lock on a cache entry for more than ",
                          absl::FormatDuration(settings_.lock_timeout),
                          "; compiling the same kernel here as well"));
  } else if (!lock.ok()) {
    WarnOnce(&lock_warned_,
             absl::StrCat("cannot lock cache entries under '", LockDir(root_), "' (",
                          lock.status().message(),
                          "); concurrent processes may compile the same kernel more than once"));
  }
  return lock;
}

absl::StatusOr<std::string> DiskCache::CreateLocked(
    const CacheKey& key, EntryKind kind, absl::FunctionRef<absl::StatusOr<std::string>()> create,
    bool* from_disk) {
  std::unique_ptr<FileLock> lock;
  if (mode_ == CacheMode::kReadWrite) {
    absl::StatusOr<std::unique_ptr<FileLock>> locked = LockKey(key, kind);
    if (locked.ok()) lock = std::move(locked).value();
    // Whoever held the lock, or raced us to it, may have published by now.
    // Only the writable root can have changed since the first search.
    if (std::optional<std::string> found = ReadTier(root_, true, key, kind)) {
      *from_disk = true;
      return std::move(found).value();
    }
  }
  // The local lock first, so the processes of one machine ask the fleet
  // one at a time; then the fleet's.
  RemoteLockResult fleet;
  if (remote_ != nullptr) {
    if (std::optional<std::string> found = FetchRemote(key, kind)) {
      *from_disk = true;
      return std::move(found).value();
    }
    fleet = remote_->LockOrWait(key, kind, settings_.lock_timeout);
    if (fleet.payload) {
      remote_hits_.fetch_add(1);
      StoreLocal(key, kind, *fleet.payload);
      *from_disk = true;
      return std::move(fleet.payload).value();
    }
  }
  compiles_.fetch_add(1);
  absl::StatusOr<std::string> created = create();
  // Stored (and published) while the locks are still held, so a waiter that
  // takes one next finds the entry instead of compiling again.
  if (created.ok()) Store(key, kind, *created);
  if (remote_ != nullptr) remote_->Unlock(key, kind, fleet.token);
  return created;
}

absl::StatusOr<std::string> DiskCache::GetOrCreate(
    const CacheKey& key, EntryKind kind, absl::FunctionRef<absl::StatusOr<std::string>()> create) {
  if (std::optional<std::string> found = Find(key, kind)) {
    hits_.fetch_add(1);
    return std::move(found).value();
  }
  bool shared = false;
  bool from_disk = false;
  absl::StatusOr<std::string> result = flights_.Do(
      FlightKey(key, kind), [&] { return CreateLocked(key, kind, create, &from_disk); }, &shared);
  if (shared) {
    shared_.fetch_add(1);
  } else {
    (from_disk ? hits_ : misses_).fetch_add(1);
  }
  return result;
}

}  // namespace jitgemm::cache
