// RemoteTier: the cache tier shared by a fleet, on a Redis server, after the
// local ones (docs/cache.md).
//
// Values are disk entries in an envelope (cache/remote_value.h), stored
// under the entry's content key; a fetched value is checked exactly as a
// disk entry is, plus its HMAC when a secret is set, and anything that fails
// is a miss (counted in `rejected`). A fleet compile lock per key (SET NX PX
// with a random token, released by a compare-and-delete script, expiring
// after lock_ttl if its holder dies) lets one process of the fleet compile
// while the others wait for its value.
//
// The tier never fails its caller: every operation degrades to a miss or a
// no-op. The first transport failure (refused, reset, timed out) trips a
// breaker that keeps the tier off for retry_after, with one warning on
// stderr, so a dead or stopped server costs one timeout per process per
// retry period.
//
// Thread safety: all methods may be called concurrently; connections are
// pooled, one per concurrent caller, and not reused by a forked child.
#ifndef JITGEMM_CACHE_REMOTE_TIER_H_
#define JITGEMM_CACHE_REMOTE_TIER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cache/entry.h"
#include "cache/key.h"
#include "cache/redis_client.h"
#include "cache/remote_settings.h"

namespace jitgemm::cache {

struct RemoteCounters {
  uint64_t hits = 0;           // values fetched and verified
  uint64_t misses = 0;         // no value under the key
  uint64_t rejected = 0;       // values that failed verification: misses
  uint64_t stores = 0;         // values published
  uint64_t errors = 0;         // operations lost to a transport or server error
  uint64_t lock_waits = 0;     // fleet locks found held by another process
  uint64_t breaker_trips = 0;  // times the breaker turned the tier off
};

// What waiting for the fleet lock of a key gave.
struct RemoteLockResult {
  // Set when another process published the value while this one waited.
  std::optional<std::string> payload;
  // Set when this process holds the lock: release it with Unlock.
  std::string token;
};

class RemoteTier {
 public:
  // nullptr when `settings.enabled` is false. With a build lacking hiredis,
  // warns once and returns nullptr. Connects on first use, not here.
  static std::unique_ptr<RemoteTier> Open(RemoteSettings settings);

  // The verified payload under `key`, or nullopt.
  std::optional<std::string> Fetch(const CacheKey& key, EntryKind kind);

  // Publishes `payload` (signed when a secret is set). Failures are counted.
  void Publish(const CacheKey& key, EntryKind kind, std::string_view payload);

  // A note (cache/disk_cache_notes.cc) shared by the fleet, under
  // "jitgemm:v1:note:<name>", in the same signed envelope as entries.
  std::optional<std::string> FetchNote(std::string_view name);
  void PublishNote(std::string_view name, std::string_view text);

  // Takes the fleet lock of `key`, or waits while another process holds it:
  // until its value appears (returned), its lock vanishes (taken over), or
  // `wait` passes or the tier fails (neither field set: compile unlocked).
  // After taking the lock the value is looked up once more, since its last
  // holder may have published just before releasing.
  RemoteLockResult LockOrWait(const CacheKey& key, EntryKind kind, absl::Duration wait);
  // Releases a lock this process holds (compare-and-delete by token).
  void Unlock(const CacheKey& key, EntryKind kind, const std::string& token);

  // A raw command for tools (jitgemm-cache remote) and tests; Unavailable
  // while the breaker is open.
  absl::StatusOr<RedisReply> Command(const std::vector<std::string_view>& args);

  // Whether the breaker is closed (the tier is in use).
  bool available() const;
  RemoteCounters counters() const;
  const RemoteSettings& settings() const { return settings_; }

 private:
  explicit RemoteTier(RemoteSettings settings);
  // Runs `op` on a pooled connection unless the breaker is open. A
  // transport failure drops the connection and trips the breaker.
  absl::StatusOr<RedisReply> Run(const std::vector<std::string_view>& args);
  void Trip(const absl::Status& why);
  std::optional<std::string> Verify(const CacheKey& key, EntryKind kind, const RedisReply& reply);
  std::optional<std::string> FetchAt(const std::string& name, const CacheKey& key, EntryKind kind);
  void PublishAt(const std::string& name, const CacheKey& key, EntryKind kind,
                 std::string_view payload);

  const RemoteSettings settings_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<RedisConnection>> idle_ ABSL_GUARDED_BY(mu_);
  // The process the pooled connections belong to.
  int pool_pid_ ABSL_GUARDED_BY(mu_) = 0;
  // Nanoseconds since the epoch until which the breaker is open; 0: closed.
  std::atomic<int64_t> open_until_ns_{0};
  std::atomic<uint64_t> hits_{0}, misses_{0}, rejected_{0}, stores_{0}, errors_{0}, lock_waits_{0},
      breaker_trips_{0};
  std::atomic<bool> rejected_warned_{false};
};

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_REMOTE_TIER_H_
