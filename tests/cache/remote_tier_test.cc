// The remote tier against a real redis-server (tests/cache/redis_server.h):
// two "machines" (separate cache roots) sharing entries and tuning records,
// values that must be misses (truncated, corrupted, other keys', unsigned or
// wrongly signed), the fleet lock, and a server that dies or stops.
#include "cache/remote_tier.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cache/disk_cache.h"
#include "cache/remote_value.h"
#include "cache/tuning_record.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/redis_server.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::PayloadFor;
using ::jitgemm::cache::testing::RedisServer;
using ::jitgemm::cache::testing::ScratchDir;
using ::jitgemm::cache::testing::TestRemoteSettings;
using ::jitgemm::cache::testing::TestSettings;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kSecret[] = "fleet-secret-0123456789";

class RemoteTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> s = RedisServer::Start(dir_.path());
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(s).value();
  }

  // A cache on its own root (a "machine") with the remote tier.
  std::shared_ptr<DiskCache> Machine(const std::string& name, const std::string& secret = "",
                                     std::string url = "") {
    CacheSettings s = TestSettings(dir_.Sub(name));
    s.remote = TestRemoteSettings(url.empty() ? server_->Url() : url, secret);
    return DiskCache::Open(s);
  }

  // Plants `value` as the remote value of `key`.
  void Plant(const CacheKey& key, EntryKind kind, const std::string& value) {
    ASSERT_TRUE(server_->Command({"SET", RemoteEntryKey(key, kind), value}).ok());
  }

  ScratchDir dir_;
  std::unique_ptr<RedisServer> server_;
};

TEST_F(RemoteTierTest, AnotherMachineIsServedFromTheRemoteAndKeepsItOnDisk) {
  const CacheKey key = MakeCacheKey("arch=sm_90a\nkernel=shared");
  const std::string payload = PayloadFor("shared", 4096);
  int creates = 0;
  auto create = [&]() -> absl::StatusOr<std::string> {
    ++creates;
    return payload;
  };
  auto a = Machine("a", kSecret);
  EXPECT_EQ(a->GetOrCreate(key, EntryKind::kCubin, create).value(), payload);
  EXPECT_EQ(a->remote()->counters().stores, 1u);
  auto b = Machine("b", kSecret);
  EXPECT_EQ(b->GetOrCreate(key, EntryKind::kCubin, create).value(), payload);
  EXPECT_EQ(creates, 1);
  EXPECT_EQ(b->counters().remote_hits, 1u);
  EXPECT_EQ(b->counters().hits, 1u);
  // Written to b's disk: a process there without the remote finds it.
  auto b_local = DiskCache::Open(TestSettings(dir_.Sub("b")));
  EXPECT_EQ(b_local->Lookup(key, EntryKind::kCubin), payload);
  // No fleet lock is left behind.
  EXPECT_THAT(server_->Keys("jitgemm:v1:lock:*"), IsEmpty());
}

TEST_F(RemoteTierTest, TuningRecordsTravelToMachinesOfTheSameKind) {
  TuningRecord r;
  r.device_name = "NVIDIA H100 80GB HBM3";
  r.sm_count = 132;
  r.driver_version = 13000;
  r.cublas_version = 130100;
  r.library_version = "0.1.0+abi1+abc";
  r.problem_signature = "m=128 n=128 k=128";
  r.winner = "cublas";
  r.reason = "measured";
  const CacheKey key = MakeCacheKey("jitgemm-tuning-key v1\nproblem=m=128 n=128 k=128\n");
  StoreTuningRecord(*Machine("a"), key, r);
  auto b = Machine("b");
  absl::StatusOr<TuningRecord> back =
      LoadTuningRecord(*b, key, r, [](std::string_view) { return true; });
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, r);
  EXPECT_EQ(b->counters().remote_hits, 1u);
}

TEST_F(RemoteTierTest, UnixSocketWorks) {
  const CacheKey key = MakeCacheKey("arch=sm_90a\nkernel=unix");
  Machine("a", "", server_->UnixUrl())->Store(key, EntryKind::kCubin, "abc");
  EXPECT_EQ(Machine("b", "", server_->UnixUrl())->Lookup(key, EntryKind::kCubin), "abc");
}

// Each planted value must be a miss that recompiles, and the recompiled
// entry must replace it remotely.
TEST_F(RemoteTierTest, BadValuesAreMissesThatRecompile) {
  const CacheKey key = MakeCacheKey("arch=sm_90a\nkernel=victim");
  const std::string payload = PayloadFor("victim", 2048);
  const std::string good = EncodeRemoteValue(key, EntryKind::kCubin, payload, kSecret);
  std::string flipped = good;
  flipped[good.size() / 2] ^= 1;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated", good.substr(0, good.size() - 100)},
      {"corrupted", flipped},
      {"other key", EncodeRemoteValue(MakeCacheKey("other"), EntryKind::kCubin, payload, kSecret)},
      {"other kind", EncodeRemoteValue(key, EntryKind::kTuningRecord, payload, kSecret)},
      {"unsigned", EncodeRemoteValue(key, EntryKind::kCubin, "evil", "")},
      {"wrong secret",
       EncodeRemoteValue(key, EntryKind::kCubin, "evil", "not-the-fleet-secret-at-all")},
      {"garbage", std::string(100, 'x')},
      {"oversized", std::string(2 << 20, 'x')},
  };
  int machine = 0;
  for (const auto& [name, value] : cases) {
    SCOPED_TRACE(name);
    Plant(key, EntryKind::kCubin, value);
    CacheSettings s = TestSettings(dir_.Sub(absl::StrCat("m", machine++)));
    s.remote = TestRemoteSettings(server_->Url(), kSecret);
    s.remote.max_value_bytes = 1 << 20;
    auto cache = DiskCache::Open(s);
    int creates = 0;
    absl::StatusOr<std::string> got = cache->GetOrCreate(key, EntryKind::kCubin, [&] {
      ++creates;
      return absl::StatusOr<std::string>(payload);
    });
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, payload);
    EXPECT_EQ(creates, 1);
    // Looked at before and again after taking the fleet lock.
    EXPECT_EQ(cache->remote()->counters().rejected, 2u);
    EXPECT_EQ(cache->counters().remote_hits, 0u);
    // Replaced by the good, signed value.
    absl::StatusOr<RedisReply> now =
        server_->Command({"GET", RemoteEntryKey(key, EntryKind::kCubin)});
    ASSERT_TRUE(now.ok());
    EXPECT_EQ(DecodeRemoteValue(now->str, key, EntryKind::kCubin, kSecret).value(), payload);
  }
}

TEST_F(RemoteTierTest, ReaderWithoutSecretAcceptsUnsignedValues) {
  const CacheKey key = MakeCacheKey("arch=sm_90a\nkernel=open");
  Plant(key, EntryKind::kCubin, EncodeRemoteValue(key, EntryKind::kCubin, "plain", ""));
  EXPECT_EQ(Machine("a")->Lookup(key, EntryKind::kCubin), "plain");
  EXPECT_EQ(Machine("b", kSecret)->Lookup(key, EntryKind::kCubin), std::nullopt);
}

TEST_F(RemoteTierTest, FleetLockIsExclusiveAndReleasedByItsOwnerOnly) {
  const CacheKey key = MakeCacheKey("arch=sm_90a\nkernel=locked");
  auto a = RemoteTier::Open(TestRemoteSettings(server_->Url()));
  auto b = RemoteTier::Open(TestRemoteSettings(server_->Url()));
  RemoteLockResult held = a->LockOrWait(key, EntryKind::kCubin, absl::Seconds(1));
  ASSERT_FALSE(held.token.empty());
  RemoteLockResult waited = b->LockOrWait(key, EntryKind::kCubin, absl::Milliseconds(200));
  EXPECT_TRUE(waited.token.empty());
  EXPECT_FALSE(waited.payload.has_value());
  EXPECT_EQ(b->counters().lock_waits, 1u);
  // A wrong token releases nothing.
  b->Unlock(key, EntryKind::kCubin, "not-the-token");
  EXPECT_EQ(server_->Keys("jitgemm:v1:lock:*").size(), 1u);
  a->Unlock(key, EntryKind::kCubin, held.token);
  EXPECT_THAT(server_->Keys("jitgemm:v1:lock:*"), IsEmpty());
}

TEST_F(RemoteTierTest, WaiterGetsTheHoldersValue) {
  const CacheKey key = MakeCacheKey("arch=sm_90a\nkernel=waited");
  auto a = RemoteTier::Open(TestRemoteSettings(server_->Url(), kSecret));
  auto b = RemoteTier::Open(TestRemoteSettings(server_->Url(), kSecret));
  RemoteLockResult held = a->LockOrWait(key, EntryKind::kCubin, absl::Seconds(1));
  ASSERT_FALSE(held.token.empty());
  std::thread holder([&] {
    absl::SleepFor(absl::Milliseconds(150));
    a->Publish(key, EntryKind::kCubin, "compiled");
    a->Unlock(key, EntryKind::kCubin, held.token);
  });
  RemoteLockResult waited = b->LockOrWait(key, EntryKind::kCubin, absl::Seconds(10));
  holder.join();
  EXPECT_EQ(waited.payload, "compiled");
  EXPECT_TRUE(waited.token.empty());
}

TEST_F(RemoteTierTest, DeadHoldersLockExpires) {
  const CacheKey key = MakeCacheKey("arch=sm_90a\nkernel=expiring");
  RemoteSettings short_ttl = TestRemoteSettings(server_->Url());
  short_ttl.lock_ttl = absl::Milliseconds(300);
  auto dead = RemoteTier::Open(short_ttl);
  ASSERT_FALSE(dead->LockOrWait(key, EntryKind::kCubin, absl::Seconds(1)).token.empty());
  // Never released: the waiter takes over once it expires.
  auto b = RemoteTier::Open(TestRemoteSettings(server_->Url()));
  const absl::Time start = absl::Now();
  RemoteLockResult r = b->LockOrWait(key, EntryKind::kCubin, absl::Seconds(10));
  EXPECT_FALSE(r.token.empty());
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  b->Unlock(key, EntryKind::kCubin, r.token);
}

TEST_F(RemoteTierTest, PasswordAndSecretNeverAppearInWarnings) {
  ScratchDir pdir;
  absl::StatusOr<std::unique_ptr<RedisServer>> guarded =
      RedisServer::Start(pdir.path(), "pw-guarded-3141");
  ASSERT_TRUE(guarded.ok()) << guarded.status();
  const CacheKey key = MakeCacheKey("arch=sm_90a\nkernel=auth");
  // The right password works.
  auto ok = Machine("a", kSecret, (*guarded)->Url());
  ok->Store(key, EntryKind::kCubin, "x");
  EXPECT_EQ(ok->remote()->counters().stores, 1u);
  // A wrong one, and a rejected value, warn without either secret.
  std::string url = (*guarded)->Url();
  url.replace(url.find("pw-guarded-3141"), 15, "pw-wrong-271828");
  ::testing::internal::CaptureStderr();
  auto bad = Machine("b", kSecret, url);
  EXPECT_EQ(bad->Lookup(key, EntryKind::kCubin), std::nullopt);
  auto other_secret = Machine("c", "another-secret-0123456789", (*guarded)->Url());
  EXPECT_EQ(other_secret->Lookup(key, EntryKind::kCubin), std::nullopt);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("remote cache"));
  EXPECT_THAT(log, HasSubstr("rejected"));
  for (const char* secret : {"pw-guarded-3141", "pw-wrong-271828", kSecret, "another-secret"}) {
    EXPECT_THAT(log, Not(HasSubstr(secret)));
  }
  EXPECT_EQ(bad->remote()->counters().breaker_trips, 1u);
}

// A dead server: one connect failure, one warning, then local tiers only.
TEST_F(RemoteTierTest, DeadServerCostsOneFailureThenLocalOnly) {
  auto cache = Machine("a");
  server_->Kill();
  ::testing::internal::CaptureStderr();
  const absl::Time start = absl::Now();
  for (int i = 0; i < 20; ++i) {
    const CacheKey key = MakeCacheKey(absl::StrCat("arch=sm_90a\nkernel=dead", i));
    absl::StatusOr<std::string> got =
        cache->GetOrCreate(key, EntryKind::kCubin, [] { return absl::StatusOr<std::string>("p"); });
    ASSERT_TRUE(got.ok());
  }
  const absl::Duration took = absl::Now() - start;
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_LT(took, absl::Milliseconds(100 + 500));
  EXPECT_EQ(cache->remote()->counters().breaker_trips, 1u);
  EXPECT_EQ(cache->counters().compiles, 20u);
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
}

// A stopped server accepts connections and answers nothing: the command
// timeout bounds the cost, once.
TEST_F(RemoteTierTest, StoppedServerCostsOneTimeoutThenLocalOnly) {
  auto cache = Machine("a");
  const CacheKey warm = MakeCacheKey("arch=sm_90a\nkernel=warm");
  cache->Store(warm, EntryKind::kCubin, "w");  // the pooled connection exists
  server_->Pause();
  ::testing::internal::CaptureStderr();
  const absl::Time start = absl::Now();
  for (int i = 0; i < 20; ++i) {
    const CacheKey key = MakeCacheKey(absl::StrCat("arch=sm_90a\nkernel=stopped", i));
    absl::StatusOr<std::string> got =
        cache->GetOrCreate(key, EntryKind::kCubin, [] { return absl::StatusOr<std::string>("p"); });
    ASSERT_TRUE(got.ok());
  }
  const absl::Duration took = absl::Now() - start;
  const std::string log = ::testing::internal::GetCapturedStderr();
  server_->Resume();
  EXPECT_GE(took, absl::Milliseconds(200));  // it did wait for the server once
  EXPECT_LT(took, absl::Milliseconds(250 + 600));
  EXPECT_EQ(cache->remote()->counters().breaker_trips, 1u);
  EXPECT_THAT(log, HasSubstr("timed out"));
}

// Writing a large value to a connection whose server died must be an
// EPIPE, not a SIGPIPE that kills the process.
TEST_F(RemoteTierTest, KilledServerNeverRaisesSigpipe) {
  CacheSettings s = TestSettings(dir_.Sub("a"));
  s.remote = TestRemoteSettings(server_->Url());
  s.remote.retry_after = absl::ZeroDuration();
  auto cache = DiskCache::Open(s);
  cache->Store(MakeCacheKey("arch=sm_90a\nkernel=before"), EntryKind::kCubin, "x");
  ASSERT_EQ(cache->remote()->counters().stores, 1u);
  server_->Kill();
  for (int i = 0; i < 3; ++i) {
    cache->Store(MakeCacheKey(absl::StrCat("arch=sm_90a\nkernel=after", i)), EntryKind::kCubin,
                 std::string(8 << 20, 'x'));
  }
  EXPECT_EQ(cache->remote()->counters().stores, 1u);
  EXPECT_GE(cache->remote()->counters().breaker_trips, 1u);
}

TEST_F(RemoteTierTest, BreakerRetriesAfterItsPeriod) {
  CacheSettings s = TestSettings(dir_.Sub("a"));
  s.remote = TestRemoteSettings(server_->Url());
  s.remote.retry_after = absl::Milliseconds(200);
  auto cache = DiskCache::Open(s);
  const CacheKey key = MakeCacheKey("arch=sm_90a\nkernel=retry");
  server_->Pause();
  EXPECT_EQ(cache->Lookup(key, EntryKind::kCubin), std::nullopt);
  EXPECT_FALSE(cache->remote()->available());
  server_->Resume();
  absl::SleepFor(absl::Milliseconds(250));
  EXPECT_TRUE(cache->remote()->available());
  cache->Store(key, EntryKind::kCubin, "back");
  EXPECT_EQ(Machine("b")->Lookup(key, EntryKind::kCubin), "back");
}

}  // namespace
}  // namespace jitgemm::cache
