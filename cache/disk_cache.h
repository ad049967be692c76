// DiskCache: the on-disk store of compiled cubins and tuning records shared by
// every process of a machine (and sometimes by a network filesystem).
//
// Entries are immutable and content-addressed by CacheKey. A writer builds the
// whole entry (cache/entry.h) in a temp file beside its final name, fsyncs it
// and renames it into place, so a reader sees either nothing or a complete
// entry; the checksum and the key text inside catch everything else (a
// truncated copy, a flipped byte, a swapped file), and a bad entry is only
// ever a miss that gets replaced. Read-only roots (a warmed bundle in an
// image) are searched before the writable root and never modified. A size cap
// evicts the least recently used entries (a hit refreshes the file's mtime).
//
// The cache never fails its caller: a root that cannot be used degrades it to
// pass-through (GetOrCreate simply runs `create`) with one warning on stderr,
// and a failed store is counted and logged once. Only the caller's own
// `create` error is ever returned.
//
// With a remote tier (settings.remote, cache/remote_tier.h) a local miss is
// looked up remotely; a verified remote hit is written to the writable root;
// an entry created here is published. GetOrCreate then also takes the key's
// fleet lock after its local one, so one process of the fleet creates.
//
// Thread safety: all methods may be called concurrently. GetOrCreate runs
// `create` once per key among the threads of this process (single-flight) and,
// through a per-key flock, once among processes sharing the root, unless
// locking is unavailable or a holder takes longer than the lock timeout; then
// the work is duplicated, never wrong.
//
// Example:
//   std::shared_ptr<DiskCache> cache = DiskCache::Default();
//   CacheKey key = MakeCacheKey(canonical_text);
//   absl::StatusOr<std::string> cubin = cache->GetOrCreate(
//       key, EntryKind::kCubin, [&] { return CompileWithNvrtc(...); });
#ifndef JITGEMM_CACHE_DISK_CACHE_H_
#define JITGEMM_CACHE_DISK_CACHE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cache/bundle_manifest.h"
#include "cache/bundle_signature.h"
#include "cache/entry.h"
#include "cache/entry_listing.h"
#include "cache/env.h"
#include "cache/key.h"
#include "cache/remote_tier.h"
#include "cache/settings.h"
#include "cache/single_flight.h"

namespace jitgemm::cache {

// Cumulative, per DiskCache object. Each Lookup and each GetOrCreate counts
// exactly one of hits, misses or shared.
struct CacheCounters {
  uint64_t hits = 0;            // served from disk
  uint64_t misses = 0;          // found nowhere (for GetOrCreate: create ran)
  uint64_t shared = 0;          // GetOrCreate joined another thread's create
  uint64_t compiles = 0;        // create() calls run
  uint64_t stores = 0;          // entries published
  uint64_t corrupt = 0;         // entries rejected by DecodeEntry (or unreadable)
  uint64_t evictions = 0;       // entries removed by Prune
  uint64_t lock_waits = 0;      // key locks found held by someone else
  uint64_t store_failures = 0;  // stores that failed (swallowed)
  uint64_t remote_hits = 0;     // of `hits`: served by the remote tier
};

// Entries and bytes (file sizes) under the writable root.
struct CacheUsage {
  uint64_t entries = 0;
  uint64_t bytes = 0;
};

// What Verify found.
struct VerifyReport {
  uint64_t entries = 0;  // files that look like entries
  uint64_t valid = 0;
  std::vector<std::string> corrupt;  // paths (removed if asked)
};

class DiskCache {
 public:
  // Never fails. An unusable writable root (not a directory, uncreatable,
  // writable by other users, or owned by another user) leaves the cache
  // without it, with one warning on stderr; a root that exists but cannot be
  // written is used read-only, also with one warning. `env` must outlive the
  // cache.
  static std::shared_ptr<DiskCache> Open(CacheSettings settings, Env* env = Env::Default());

  // The process-wide cache from CacheSettings::FromEnvironment(), created on
  // first use and never destroyed.
  static std::shared_ptr<DiskCache> Default();

  // The payload stored under `key`, searching read-only roots first, then the
  // writable root, then the remote tier. A corrupt
  // entry counts in `corrupt`, is removed if it is in the writable root, and
  // the search goes on. A hit in the writable root refreshes its LRU time.
  std::optional<std::string> Lookup(const CacheKey& key, EntryKind kind);

  // Publishes `payload` under `key` (temp file, fsync, rename). Failures
  // (ENOSPC, EDQUOT, EXDEV, EBUSY, ...) are swallowed: counted, logged once,
  // and the temp file removed. Does nothing unless the mode is kReadWrite.
  // May evict old entries when the cap is exceeded. Also publishes to the
  // remote tier, whatever the mode.
  void Store(const CacheKey& key, EntryKind kind, std::string_view payload);

  // Lookup; on a miss, create once (see the class comment) and Store. Returns
  // `create`'s error unchanged (to every waiting thread); a later call
  // retries.
  absl::StatusOr<std::string> GetOrCreate(const CacheKey& key, EntryKind kind,
                                          absl::FunctionRef<absl::StatusOr<std::string>()> create);

  CacheCounters counters() const;

  // Threads of this process now waiting for another thread's create of
  // `key`; for tests and stats.
  size_t Waiters(const CacheKey& key, EntryKind kind) const;

  // The writable root as configured or resolved, even when unusable.
  std::string root() const { return root_; }
  // What the cache really does: kReadWrite only if the root is writable;
  // kReadOnly if it (or a read-only root) can only be read; kOff if no disk
  // is used at all.
  CacheMode mode() const { return mode_; }
  // Whether the writable root passed the checks at Open and is read (and,
  // in kReadWrite, written).
  bool root_usable() const { return root_readable_; }
  // The read-only roots that passed the checks at Open.
  const std::vector<std::string>& readonly_roots() const { return readonly_roots_; }
  const CacheSettings& settings() const { return settings_; }
  // The remote tier, or nullptr when none is configured (or usable in this
  // build).
  RemoteTier* remote() const { return remote_.get(); }
  // The keys of settings().trusted_keys, loaded at Open; nullptr when none
  // were configured. Configured keys that fail to load leave an empty set,
  // which trusts nothing: a typo must not turn the check off.
  const TrustedKeys* trusted_keys() const {
    return trusted_keys_.has_value() ? &*trusted_keys_ : nullptr;
  }

  // Evicts least recently used entries (oldest mtime first, then by path)
  // from the writable root until their file sizes sum to at most `max_bytes`.
  // Entries removed meanwhile by another process are accounted, not counted
  // as evictions. FailedPrecondition unless the mode is kReadWrite.
  absl::Status Prune(uint64_t max_bytes);

  // Removes temp files older than `older_than` (writers that died before
  // publishing) and lock files abandoned by dead holders that are also that
  // old. Younger temp files may belong to a live writer and are kept. Runs
  // with the default once per process, at its first store.
  void CleanTempFiles(absl::Duration older_than = absl::Hours(1));

  // A small text kept in the writable root (v1/notes/<name>), or nullopt.
  // Notes are hints their readers check, never entries (disk_cache_notes.cc).
  std::optional<std::string> ReadNote(absl::string_view name);
  // The fleet's copy of a note in the remote tier (verified like an entry),
  // or nullopt.
  std::optional<std::string> ReadRemoteNote(absl::string_view name);
  // Writes a note (kReadWrite only; failures are silent: a missing note
  // only costs its reader the slow path), and with `publish` also to the
  // remote tier.
  void WriteNote(absl::string_view name, std::string_view text, bool publish = true);

  // Counts entries and bytes in the writable root.
  absl::StatusOr<CacheUsage> Usage();

  // Parses every entry of the writable root; with `remove_corrupt`, deletes
  // the bad ones (kReadWrite only).
  absl::StatusOr<VerifyReport> Verify(bool remove_corrupt);

 private:
  DiskCache(CacheSettings settings, Env* env);
  // Open's checks: sets mode_, root_readable_ and readonly_roots_, and
  // prints the one warning a degraded cache owes its user.
  void CheckRoots();
  void CheckReadOnlyRoots();
  void CheckWritableRoot();
  // Checks the writable root's folders down `relative` (cache/folder_trust.h).
  // The first failure distrusts the root for good, with one warning.
  bool WritableRootTrusted(absl::string_view relative, bool last_is_file,
                           std::vector<FileInfo>* infos);
  // The same for locks/ (CheckTrustedLockDir).
  bool LockDirTrusted();
  // Distrusts the writable root for good, warning once; false for NotFound
  // (a removed root is only a miss). Returns false.
  bool Distrust(const absl::Status& why);
  // Sets trusted_keys_ from settings_.trusted_keys, warning about any that
  // cannot be loaded.
  void LoadTrustedKeys();
  // With trusted keys: a read-only root must be a bundle whose manifest one
  // of them signed (cache/bundle_signature.h); remembers its listing.
  absl::Status CheckSignedRoot(const std::string& root);
  // With trusted keys, an entry of a read-only root must be listed in its
  // signed manifest with these bytes' size and checksum.
  absl::StatusOr<std::string> CheckListed(const std::string& root, const std::string& relative,
                                          std::string_view bytes,
                                          absl::StatusOr<std::string> payload) const;
  // Searches every tier without counting a hit or miss.
  std::optional<std::string> Find(const CacheKey& key, EntryKind kind);
  std::optional<std::string> ReadTier(const std::string& root, bool writable, const CacheKey& key,
                                      EntryKind kind);
  // The leader's side of GetOrCreate; `*from_disk` is set when another
  // process published the entry while this one waited for its lock.
  absl::StatusOr<std::string> CreateLocked(const CacheKey& key, EntryKind kind,
                                           absl::FunctionRef<absl::StatusOr<std::string>()> create,
                                           bool* from_disk);
  // Store without the remote tier.
  void StoreLocal(const CacheKey& key, EntryKind kind, std::string_view payload);
  // The remote tier's verified payload, written to the writable root.
  std::optional<std::string> FetchRemote(const CacheKey& key, EntryKind kind);
  // Returns the bytes written, 0 when an equivalent entry was already there.
  absl::StatusOr<uint64_t> Publish(const CacheKey& key, EntryKind kind, std::string_view payload);
  absl::StatusOr<std::unique_ptr<FileLock>> LockKey(const CacheKey& key, EntryKind kind);
  void WarnOnce(std::atomic<bool>* flag, absl::string_view message);
  void AfterStore(uint64_t bytes);
  absl::StatusOr<std::vector<EntryFileInfo>> ListEntries();
  absl::Status PruneLocked(uint64_t max_bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(prune_mu_);

  Env* const env_;
  const CacheSettings settings_;
  std::string root_;
  CacheMode mode_ = CacheMode::kOff;
  bool root_readable_ = false;
  std::vector<std::string> readonly_roots_;

  std::atomic<uint64_t> hits_{0}, misses_{0}, shared_{0}, compiles_{0}, stores_{0}, corrupt_{0},
      evictions_{0}, lock_waits_{0}, store_failures_{0};
  std::atomic<bool> store_warned_{false}, lock_warned_{false}, lock_timeout_warned_{false},
      corrupt_warned_{false}, readonly_distrust_warned_{false};
  // Set when a folder of the writable root fails the trust rule after Open.
  std::atomic<bool> distrusted_{false};
  // With trusted keys: each signed read-only root's listing, relative path
  // -> size and checksum; written only by Open.
  std::map<std::string, std::map<std::string, BundleFile>> signed_listings_;
  std::optional<TrustedKeys> trusted_keys_;
  std::unique_ptr<RemoteTier> remote_;
  std::atomic<uint64_t> remote_hits_{0};

  SingleFlight flights_;

  // Serialises Prune and the running byte count that triggers it.
  absl::Mutex prune_mu_;
  bool usage_known_ ABSL_GUARDED_BY(prune_mu_) = false;
  uint64_t usage_bytes_ ABSL_GUARDED_BY(prune_mu_) = 0;
};

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_DISK_CACHE_H_
