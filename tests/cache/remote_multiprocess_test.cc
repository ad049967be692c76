// The remote tier with real processes and a real redis-server: two
// "machines" (separate cache roots) x 8 cache_worker processes, cold,
// released together on one key. Fleet-wide, each key is created exactly
// once, every process returns the same bytes, and no fleet lock is left;
// a server killed or stopped mid-run costs time bounded by the timeouts and
// never a failure.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cache/disk_cache.h"
#include "cache/remote_value.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/redis_server.h"
#include "tests/cache/test_util.h"
#include "tests/cache/worker_group.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::PayloadFor;
using ::jitgemm::cache::testing::ReadBytes;
using ::jitgemm::cache::testing::RedisServer;
using ::jitgemm::cache::testing::ScratchDir;
using ::jitgemm::cache::testing::TestSettings;
using ::jitgemm::cache::testing::WorkerGroup;
using ::testing::Each;
using ::testing::IsEmpty;

constexpr int kMachines = 2;
constexpr int kProcessesPerMachine = 8;
constexpr int kRounds = 20;
constexpr int kPayloadBytes = 65536;
constexpr char kSecret[] = "fleet-secret-for-the-test-0123";

int CountLines(const std::string& path) {
  std::string text = ReadBytes(path);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// hits misses rejected stores errors lock_waits trips
std::vector<uint64_t> ReadRemoteStats(const std::string& path) {
  std::vector<uint64_t> v;
  for (absl::string_view f :
       absl::StrSplit(ReadBytes(path), absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
    v.push_back(std::stoull(std::string(f)));
  }
  v.resize(7);
  return v;
}

class RemoteMultiProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> s = RedisServer::Start(dir_.Sub(""));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(s).value();
  }

  struct Round {
    int creates = 0;
    uint64_t remote_lock_waits = 0, remote_hits = 0, trips = 0;
    absl::Duration took;
  };

  // One round on a fresh key; `during` runs right after the release.
  template <typename F>
  Round RunRound(int round, int create_ms, F during) {
    Round result;
    const std::string key =
        absl::StrCat("arch=sm_90a\nround=", round,
                     "\ntest=", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    const std::string creates = dir_.Sub(absl::StrCat("creates-", round));
    WorkerGroup group;
    for (int m = 0; m < kMachines; ++m) {
      for (int i = 0; i < kProcessesPerMachine; ++i) {
        const std::string tag = absl::StrCat(round, "-", m, "-", i);
        EXPECT_GT(
            group.Spawn({absl::StrCat("--root=", dir_.Sub(absl::StrCat("machine", m))),
                         "--key=" + key, "--creates=" + creates, "--out=" + dir_.Sub("out-" + tag),
                         "--remote-stats=" + dir_.Sub("rstats-" + tag),
                         absl::StrCat("--create-ms=", create_ms),
                         absl::StrCat("--payload-bytes=", kPayloadBytes),
                         "--remote=" + server_->Url(), std::string("--secret=") + kSecret}),
            0);
      }
    }
    EXPECT_TRUE(group.WaitForSignals('r', kMachines * kProcessesPerMachine));
    const absl::Time start = absl::Now();
    group.Release();
    during();
    EXPECT_THAT(group.WaitAll(), Each(0)) << "round " << round;
    result.took = absl::Now() - start;
    const std::string expected = PayloadFor(key, kPayloadBytes);
    for (int m = 0; m < kMachines; ++m) {
      for (int i = 0; i < kProcessesPerMachine; ++i) {
        const std::string tag = absl::StrCat(round, "-", m, "-", i);
        EXPECT_EQ(ReadBytes(dir_.Sub("out-" + tag)), expected) << tag;
        std::vector<uint64_t> r = ReadRemoteStats(dir_.Sub("rstats-" + tag));
        result.remote_hits += r[0];
        result.remote_lock_waits += r[5];
        result.trips += r[6];
      }
    }
    result.creates = CountLines(creates);
    return result;
  }

  ScratchDir dir_;
  std::unique_ptr<RedisServer> server_;
};

TEST_F(RemoteMultiProcessTest, TwoMachinesOfEightProcessesCompileEachKeyOnceFleetWide) {
  uint64_t fleet_waits = 0, remote_hits = 0;
  for (int round = 0; round < kRounds; ++round) {
    Round r = RunRound(round, 20, [] {});
    EXPECT_EQ(r.creates, 1) << "round " << round;
    EXPECT_EQ(r.trips, 0u);
    EXPECT_THAT(server_->Keys("jitgemm:v1:lock:*"), IsEmpty()) << "round " << round;
    fleet_waits += r.remote_lock_waits;
    remote_hits += r.remote_hits;
  }
  // The machines did meet on the fleet lock, and the second machine was
  // served from the remote; otherwise this proved nothing.
  EXPECT_GT(fleet_waits, 0u);
  EXPECT_GE(remote_hits, static_cast<uint64_t>(kRounds));
  EXPECT_EQ(server_->Keys("jitgemm:v1:cubin:*").size(), static_cast<size_t>(kRounds));
  // Both machines keep every entry on their own disk.
  for (int m = 0; m < kMachines; ++m) {
    auto local = DiskCache::Open(TestSettings(dir_.Sub(absl::StrCat("machine", m))));
    EXPECT_EQ(local->Usage()->entries, static_cast<uint64_t>(kRounds)) << "machine " << m;
  }
}

TEST_F(RemoteMultiProcessTest, ServerKilledMidRunEveryProcessStillSucceeds) {
  Round r = RunRound(0, 300, [&] {
    absl::SleepFor(absl::Milliseconds(100));
    server_->Kill();
  });
  // At most one create per machine: the local locks still order each one.
  EXPECT_GE(r.creates, 1);
  EXPECT_LE(r.creates, kMachines);
  EXPECT_LT(r.took, absl::Seconds(5));
}

TEST_F(RemoteMultiProcessTest, ServerStoppedMidRunCostsAtMostTheTimeouts) {
  Round r = RunRound(0, 300, [&] {
    absl::SleepFor(absl::Milliseconds(100));
    server_->Pause();
  });
  EXPECT_GE(r.creates, 1);
  EXPECT_LE(r.creates, kMachines);
  // A create (300 ms) plus a few command timeouts (250 ms each), with room
  // for starting 16 processes on a busy machine.
  EXPECT_LT(r.took, absl::Seconds(5));
  EXPECT_GE(r.trips, 1u);
  server_->Resume();
}

}  // namespace
}  // namespace jitgemm::cache
