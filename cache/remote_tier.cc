#include "cache/remote_tier.h"

#include <openssl/rand.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cache/log.h"
#include "cache/remote_value.h"

namespace jitgemm::cache {
namespace {

// Deletes the lock only if it still holds our token: a holder whose lock
// expired must not release the next holder's.
constexpr std::string_view kUnlockScript =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
    "else return 0 end";

// How often a waiter looks for the holder's value.
constexpr absl::Duration kFirstPoll = absl::Milliseconds(5);
constexpr absl::Duration kMaxPoll = absl::Milliseconds(100);

std::string NewToken() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    // Unique enough to tell holders apart; the token is no secret.
    return absl::StrCat("t", absl::ToUnixNanos(absl::Now()), "-",
                        reinterpret_cast<uintptr_t>(&bytes));
  }
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<char*>(bytes), sizeof(bytes)));
}

}  // namespace

RemoteTier::RemoteTier(RemoteSettings settings) : settings_(std::move(settings)) {}

std::unique_ptr<RemoteTier> RemoteTier::Open(RemoteSettings settings) {
  if (!settings.enabled) return nullptr;
  if (!RedisClientAvailable()) {
    LogCacheWarning(absl::StrCat("JITGEMM_REMOTE_CACHE is set (", settings.endpoint.Redacted(),
                                 ") but this jitgemm was built without hiredis: the remote "
                                 "tier is OFF. Install libhiredis-dev and rebuild."));
    return nullptr;
  }
  return std::unique_ptr<RemoteTier>(new RemoteTier(std::move(settings)));
}

bool RemoteTier::available() const {
  const int64_t until = open_until_ns_.load();
  return until == 0 || absl::ToUnixNanos(absl::Now()) >= until;
}

void RemoteTier::Trip(const absl::Status& why) {
  errors_.fetch_add(1);
  const int64_t now = absl::ToUnixNanos(absl::Now());
  int64_t until = open_until_ns_.load();
  // Only the failure that finds the breaker closed trips it and warns;
  // commands that were already in flight just count.
  if (until != 0 && now < until) return;
  const int64_t next = now + absl::ToInt64Nanoseconds(settings_.retry_after);
  if (!open_until_ns_.compare_exchange_strong(until, std::max<int64_t>(next, 1))) return;
  breaker_trips_.fetch_add(1);
  LogCacheWarning(absl::StrCat("remote cache ", settings_.endpoint.Redacted(), " failed (",
                               why.message(), "); using the local tiers only for the next ",
                               absl::FormatDuration(settings_.retry_after)));
}

absl::StatusOr<RedisReply> RemoteTier::Run(const std::vector<std::string_view>& args) {
  if (!available()) return absl::UnavailableError("the remote cache is off after a failure");
  std::unique_ptr<RedisConnection> conn;
  {
    absl::MutexLock lock(&mu_);
    // A forked child must not talk on its parent's connections: both would
    // read each other's replies.
    if (pool_pid_ != ::getpid()) {
      idle_.clear();
      pool_pid_ = ::getpid();
    }
    if (!idle_.empty()) {
      conn = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (conn == nullptr) {
    // The largest reply is a value read with GETRANGE, or a page of SCAN.
    absl::StatusOr<std::unique_ptr<RedisConnection>> made =
        RedisConnection::Connect(settings_.endpoint, settings_.connect_timeout,
                                 settings_.command_timeout, settings_.max_value_bytes + 1);
    if (!made.ok()) {
      Trip(made.status());
      return made.status();
    }
    conn = std::move(made).value();
  }
  absl::StatusOr<RedisReply> reply = conn->Command(args);
  if (conn->broken()) {
    Trip(reply.status());
    return reply;
  }
  if (!reply.ok()) errors_.fetch_add(1);  // a server error: the connection stays good
  absl::MutexLock lock(&mu_);
  if (pool_pid_ == ::getpid()) idle_.push_back(std::move(conn));
  return reply;
}

absl::StatusOr<RedisReply> RemoteTier::Command(const std::vector<std::string_view>& args) {
  return Run(args);
}

std::optional<std::string> RemoteTier::Verify(const CacheKey& key, EntryKind kind,
                                              const RedisReply& reply) {
  if (reply.type != RedisReply::Type::kString || reply.str.empty()) {
    misses_.fetch_add(1);
    return std::nullopt;
  }
  absl::StatusOr<std::string> payload =
      reply.str.size() > settings_.max_value_bytes
          ? absl::StatusOr<std::string>(absl::ResourceExhaustedError(
                absl::StrCat("value larger than ", settings_.max_value_bytes, " bytes")))
          : DecodeRemoteValue(reply.str, key, kind, settings_.secret);
  if (!payload.ok()) {
    rejected_.fetch_add(1);
    if (!rejected_warned_.exchange(true)) {
      LogCacheWarning(
          absl::StrCat("rejected a value of remote cache ", settings_.endpoint.Redacted(), " (",
                       payload.status().message(),
                       "); it is treated as a miss. Later rejections are only counted."));
    }
    return std::nullopt;
  }
  hits_.fetch_add(1);
  return std::move(payload).value();
}

std::optional<std::string> RemoteTier::Fetch(const CacheKey& key, EntryKind kind) {
  return FetchAt(RemoteEntryKey(key, kind), key, kind);
}

std::optional<std::string> RemoteTier::FetchAt(const std::string& name, const CacheKey& key,
                                               EntryKind kind) {
  // GETRANGE, not GET: a value over the bound arrives cut at bound + 1
  // bytes, so an oversized value costs no large allocation. Values are
  // never empty, so an empty reply is an absent key.
  const std::string last = std::to_string(settings_.max_value_bytes);
  absl::StatusOr<RedisReply> reply = Run({"GETRANGE", name, "0", last});
  if (!reply.ok()) return std::nullopt;
  return Verify(key, kind, *reply);
}

void RemoteTier::Publish(const CacheKey& key, EntryKind kind, std::string_view payload) {
  PublishAt(RemoteEntryKey(key, kind), key, kind, payload);
}

void RemoteTier::PublishAt(const std::string& name, const CacheKey& key, EntryKind kind,
                           std::string_view payload) {
  const std::string value = EncodeRemoteValue(key, kind, payload, settings_.secret);
  if (value.empty() || value.size() > settings_.max_value_bytes) {
    errors_.fetch_add(1);
    return;
  }
  absl::StatusOr<RedisReply> reply = Run({"SET", name, value});
  if (reply.ok()) stores_.fetch_add(1);
}

namespace {

// The key text a note's envelope carries, so a note cannot pass for an
// entry or another note.
CacheKey NoteKey(std::string_view name) {
  return MakeCacheKey(absl::StrCat("jitgemm-note v1\nname=", std::string(name), "\n"));
}

}  // namespace

std::optional<std::string> RemoteTier::FetchNote(std::string_view name) {
  return FetchAt(absl::StrCat("jitgemm:v1:note:", std::string(name)), NoteKey(name),
                 EntryKind::kTuningRecord);
}

void RemoteTier::PublishNote(std::string_view name, std::string_view text) {
  PublishAt(absl::StrCat("jitgemm:v1:note:", std::string(name)), NoteKey(name),
            EntryKind::kTuningRecord, text);
}

RemoteLockResult RemoteTier::LockOrWait(const CacheKey& key, EntryKind kind, absl::Duration wait) {
  RemoteLockResult result;
  const std::string lock = RemoteLockKey(key, kind);
  const std::string token = NewToken();
  const std::string ttl =
      std::to_string(std::max<int64_t>(1, absl::ToInt64Milliseconds(settings_.lock_ttl)));
  const absl::Time deadline = absl::Now() + wait;
  absl::Duration poll = kFirstPoll;
  bool counted = false;
  for (;;) {
    absl::StatusOr<RedisReply> set = Run({"SET", lock, token, "NX", "PX", ttl});
    if (!set.ok()) return result;  // tier down: compile without the fleet lock
    if (set->type == RedisReply::Type::kStatus) {
      // Taken. Its last holder may have published and released between our
      // lookup and the SET: look again before compiling.
      if (std::optional<std::string> found = Fetch(key, kind)) {
        Unlock(key, kind, token);
        result.payload = std::move(found);
        return result;
      }
      result.token = token;
      return result;
    }
    if (!counted) {
      lock_waits_.fetch_add(1);
      counted = true;
    }
    if (std::optional<std::string> found = Fetch(key, kind)) {
      result.payload = std::move(found);
      return result;
    }
    if (!available() || absl::Now() >= deadline) return result;
    absl::SleepFor(std::min(poll, deadline - absl::Now()));
    poll = std::min(poll * 2, kMaxPoll);
  }
}

void RemoteTier::Unlock(const CacheKey& key, EntryKind kind, const std::string& token) {
  if (token.empty()) return;
  Run({"EVAL", kUnlockScript, "1", RemoteLockKey(key, kind), token}).IgnoreError();
}

RemoteCounters RemoteTier::counters() const {
  RemoteCounters c;
  c.hits = hits_.load();
  c.misses = misses_.load();
  c.rejected = rejected_.load();
  c.stores = stores_.load();
  c.errors = errors_.load();
  c.lock_waits = lock_waits_.load();
  c.breaker_trips = breaker_trips_.load();
  return c;
}

}  // namespace jitgemm::cache
