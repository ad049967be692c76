// RELIABILITY 9: many threads of one process. One key: one create, every
// thread gets its bytes; many keys: no deadlock; a create error reaches every
// waiter and a later call retries.
#include <atomic>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cache/disk_cache.h"
#include "cache/single_flight.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {

// Names the parameter in test output instead of "4-byte object".
void PrintTo(CacheMode mode, std::ostream* os) { *os << CacheModeName(mode); }

namespace {

using ::jitgemm::cache::testing::IsOk;
using ::jitgemm::cache::testing::PayloadFor;
using ::jitgemm::cache::testing::ScratchDir;
using ::jitgemm::cache::testing::StatusIs;
using ::jitgemm::cache::testing::TestSettings;
using ::testing::HasSubstr;

constexpr int kThreads = 64;

// Blocks until `ready()` or 60 s; the tests then fail rather than hang.
template <class Pred>
bool WaitUntil(Pred ready) {
  absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (!ready()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

// Runs `body(i)` on kThreads threads released together.
template <class Body>
void RunTogether(Body body) {
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      body(i);
    });
  }
  for (auto& t : threads) t.join();
}

TEST(SingleFlightTest, OneRunSharedByAllWaiters) {
  SingleFlight flights;
  std::atomic<int> runs{0}, shared_count{0};
  std::vector<absl::StatusOr<std::string>> results(kThreads);
  RunTogether([&](int i) {
    bool shared = false;
    results[i] = flights.Do(
        "k",
        [&]() -> absl::StatusOr<std::string> {
          ++runs;
          // Hold the flight open until every other thread has joined it.
          EXPECT_TRUE(WaitUntil([&] { return flights.Joined("k") == kThreads - 1; }));
          return std::string("value");
        },
        &shared);
    if (shared) ++shared_count;
  });
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(shared_count.load(), kThreads - 1);
  for (const auto& r : results) EXPECT_THAT(r, ::testing::Eq(absl::StatusOr<std::string>("value")));
  EXPECT_EQ(flights.InFlight(), 0u);
}

TEST(SingleFlightTest, ErrorReachesEveryWaiterAndIsNotKept) {
  SingleFlight flights;
  std::atomic<int> runs{0};
  std::vector<absl::StatusOr<std::string>> results(kThreads);
  RunTogether([&](int i) {
    results[i] = flights.Do("k", [&]() -> absl::StatusOr<std::string> {
      ++runs;
      EXPECT_TRUE(WaitUntil([&] { return flights.Joined("k") == kThreads - 1; }));
      return absl::InternalError("nvrtc: boom");
    });
  });
  EXPECT_EQ(runs.load(), 1);
  for (const auto& r : results) {
    EXPECT_THAT(r, StatusIs(absl::StatusCode::kInternal, HasSubstr("boom")));
  }
  absl::StatusOr<std::string> retry =
      flights.Do("k", [] { return absl::StatusOr<std::string>("ok"); });
  EXPECT_THAT(retry, IsOk());
}

class ThreadsTest : public ::testing::TestWithParam<CacheMode> {
 protected:
  std::shared_ptr<DiskCache> OpenCache() {
    CacheSettings s = TestSettings(dir_.Sub("cache"));
    s.mode = GetParam();
    return DiskCache::Open(s);
  }
  ScratchDir dir_;
};

TEST_P(ThreadsTest, SixtyFourThreadsOneKeyOneCreate) {
  auto cache = OpenCache();
  const CacheKey key = MakeCacheKey("arch=sm_90a\none key, 64 threads");
  const std::string expected = PayloadFor(key.text, 100000);
  std::atomic<int> creates{0};
  std::vector<absl::StatusOr<std::string>> results(kThreads);
  RunTogether([&](int i) {
    results[i] = cache->GetOrCreate(key, EntryKind::kCubin, [&]() -> absl::StatusOr<std::string> {
      ++creates;
      EXPECT_TRUE(
          WaitUntil([&] { return cache->Waiters(key, EntryKind::kCubin) == kThreads - 1; }));
      return expected;
    });
  });
  EXPECT_EQ(creates.load(), 1);
  for (const auto& r : results) {
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(*r, expected);
  }
  CacheCounters c = cache->counters();
  EXPECT_EQ(c.compiles, 1u);
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.shared, static_cast<uint64_t>(kThreads - 1));
  EXPECT_EQ(c.hits, 0u);
  EXPECT_EQ(c.stores, GetParam() == CacheMode::kReadWrite ? 1u : 0u);
}

TEST_P(ThreadsTest, CreateErrorReachesEveryWaiterAndALaterCallRetries) {
  auto cache = OpenCache();
  const CacheKey key = MakeCacheKey("arch=sm_90a\nfails once");
  std::atomic<int> creates{0};
  std::vector<absl::StatusOr<std::string>> results(kThreads);
  RunTogether([&](int i) {
    results[i] = cache->GetOrCreate(key, EntryKind::kCubin, [&]() -> absl::StatusOr<std::string> {
      ++creates;
      EXPECT_TRUE(
          WaitUntil([&] { return cache->Waiters(key, EntryKind::kCubin) == kThreads - 1; }));
      return absl::InvalidArgumentError("nvrtc: error: identifier \"x\" is undefined");
    });
  });
  EXPECT_EQ(creates.load(), 1);
  for (const auto& r : results) {
    EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("undefined")));
  }
  EXPECT_EQ(cache->counters().stores, 0u);
  EXPECT_EQ(cache->Lookup(key, EntryKind::kCubin), std::nullopt);

  absl::StatusOr<std::string> retry = cache->GetOrCreate(
      key, EntryKind::kCubin, [] { return absl::StatusOr<std::string>("fixed"); });
  ASSERT_THAT(retry, IsOk());
  EXPECT_EQ(*retry, "fixed");
  EXPECT_EQ(cache->counters().compiles, 2u);
}

TEST_P(ThreadsTest, ManyKeysManyThreadsNoDeadlockEachKeyOnce) {
  auto cache = OpenCache();
  constexpr int kKeys = 16;
  constexpr int kCallsPerThread = 32;
  std::vector<CacheKey> keys;
  for (int k = 0; k < kKeys; ++k) keys.push_back(MakeCacheKey(absl::StrCat("key ", k)));
  std::atomic<int> creates[kKeys] = {};
  std::atomic<int> wrong{0};
  RunTogether([&](int i) {
    for (int j = 0; j < kCallsPerThread; ++j) {
      int k = (i * 7 + j) % kKeys;
      absl::StatusOr<std::string> r =
          cache->GetOrCreate(keys[k], EntryKind::kCubin, [&]() -> absl::StatusOr<std::string> {
            ++creates[k];
            absl::SleepFor(absl::Milliseconds(2));
            return PayloadFor(keys[k].text, 3000);
          });
      if (!r.ok() || *r != PayloadFor(keys[k].text, 3000)) ++wrong;
    }
  });
  EXPECT_EQ(wrong.load(), 0);
  if (GetParam() == CacheMode::kReadWrite) {
    // The disk remembers: after the first create, every caller hits or joins.
    for (int k = 0; k < kKeys; ++k) EXPECT_EQ(creates[k].load(), 1) << "key " << k;
  }
  CacheCounters c = cache->counters();
  EXPECT_EQ(c.hits + c.misses + c.shared, static_cast<uint64_t>(kThreads * kCallsPerThread));
}

TEST_P(ThreadsTest, SeparateCacheObjectsOnOneRootCreateOnce) {
  // Like processes: each thread has its own DiskCache, so only the file
  // lock keeps them from compiling twice.
  if (GetParam() != CacheMode::kReadWrite) GTEST_SKIP() << "needs the disk";
  const CacheKey key = MakeCacheKey("arch=sm_90a\nper-thread cache objects");
  std::vector<std::shared_ptr<DiskCache>> caches;
  for (int i = 0; i < 16; ++i) caches.push_back(OpenCache());
  std::atomic<int> creates{0};
  std::vector<std::thread> threads;
  std::latch start(16);
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      absl::StatusOr<std::string> r =
          caches[i]->GetOrCreate(key, EntryKind::kCubin, [&]() -> absl::StatusOr<std::string> {
            ++creates;
            absl::SleepFor(absl::Milliseconds(50));
            return std::string("one");
          });
      EXPECT_THAT(r, IsOk());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(creates.load(), 1);
}

INSTANTIATE_TEST_SUITE_P(Modes, ThreadsTest,
                         ::testing::Values(CacheMode::kReadWrite, CacheMode::kOff),
                         [](const ::testing::TestParamInfo<CacheMode>& info) {
                           return std::string(CacheModeName(info.param));
                         });

}  // namespace
}  // namespace jitgemm::cache
