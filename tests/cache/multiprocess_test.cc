// RELIABILITY 6, 7, 8 and 15 with real processes: cache_worker processes
// started 16 at a time and released together on a cold key.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cache/disk_cache.h"
#include "cache/layout.h"
#include "cache/tuning_record.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"
#include "tests/cache/worker_group.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::FilesUnder;
using ::jitgemm::cache::testing::IsOk;
using ::jitgemm::cache::testing::PayloadFor;
using ::jitgemm::cache::testing::ReadBytes;
using ::jitgemm::cache::testing::ScratchDir;
using ::jitgemm::cache::testing::TempFilesUnder;
using ::jitgemm::cache::testing::TestSettings;
using ::jitgemm::cache::testing::WorkerGroup;
using ::jitgemm::cache::testing::WriteBytes;
using ::testing::Each;
using ::testing::IsEmpty;

constexpr int kProcesses = 16;
constexpr int kRounds = 20;
constexpr int kPayloadBytes = 65536;

int CountLines(const std::string& path) {
  std::string text = ReadBytes(path);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

struct Stats {
  uint64_t hits = 0, misses = 0, compiles = 0, stores = 0, lock_waits = 0, store_failures = 0,
           corrupt = 0;
};

Stats ReadStats(const std::string& path) {
  Stats s;
  std::vector<std::string> f =
      absl::StrSplit(ReadBytes(path), absl::ByAnyChar(" \n"), absl::SkipEmpty());
  if (f.size() != 7) return s;
  uint64_t* fields[] = {&s.hits,       &s.misses,         &s.compiles, &s.stores,
                        &s.lock_waits, &s.store_failures, &s.corrupt};
  for (int i = 0; i < 7; ++i) *fields[i] = std::stoull(f[i]);
  return s;
}

class MultiProcessTest : public ::testing::Test {
 protected:
  struct Round {
    int creates = 0;
    Stats total;
  };

  // One round: 16 cold workers on a fresh key, released together. Checks
  // that every worker succeeded with the expected bytes and nothing was left
  // behind; returns how many creates ran.
  Round RunRound(int round, const std::vector<std::string>& extra) {
    Round result;
    const std::string key =
        absl::StrCat("arch=sm_90a\nround=", round,
                     "\ntest=", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    const std::string creates = dir_.Sub(absl::StrCat("creates-", round));
    WorkerGroup group;
    for (int i = 0; i < kProcesses; ++i) {
      std::vector<std::string> args = {
          "--root=" + root_,
          "--key=" + key,
          "--creates=" + creates,
          absl::StrCat("--out=", dir_.Sub(absl::StrCat("out-", round, "-", i))),
          absl::StrCat("--stats=", dir_.Sub(absl::StrCat("stats-", round, "-", i))),
          "--create-ms=20",
          absl::StrCat("--payload-bytes=", kPayloadBytes)};
      args.insert(args.end(), extra.begin(), extra.end());
      EXPECT_GT(group.Spawn(args), 0);
    }
    EXPECT_TRUE(group.WaitForSignals('r', kProcesses)) << "workers did not start";
    group.Release();
    EXPECT_THAT(group.WaitAll(), Each(0)) << "round " << round;
    const std::string expected = PayloadFor(key, kPayloadBytes);
    for (int i = 0; i < kProcesses; ++i) {
      EXPECT_EQ(ReadBytes(dir_.Sub(absl::StrCat("out-", round, "-", i))), expected)
          << "round " << round << " worker " << i;
      Stats s = ReadStats(dir_.Sub(absl::StrCat("stats-", round, "-", i)));
      result.total.hits += s.hits;
      result.total.misses += s.misses;
      result.total.compiles += s.compiles;
      result.total.stores += s.stores;
      result.total.lock_waits += s.lock_waits;
      result.total.store_failures += s.store_failures;
      result.total.corrupt += s.corrupt;
    }
    EXPECT_THAT(TempFilesUnder(root_), IsEmpty()) << "round " << round;
    result.creates = CountLines(creates);
    // The entry on disk is the one everybody returned.
    auto check = DiskCache::Open(TestSettings(root_));
    EXPECT_EQ(check->Lookup(MakeCacheKey(key), EntryKind::kCubin), expected);
    return result;
  }

  ScratchDir dir_;
  std::string root_ = dir_.Sub("cache");
};

// RELIABILITY 6.
TEST_F(MultiProcessTest, SixteenColdProcessesCompileEachKeyExactlyOnce) {
  uint64_t waits = 0;
  for (int round = 0; round < kRounds; ++round) {
    Round r = RunRound(round, {});
    EXPECT_EQ(r.creates, 1) << "round " << round;
    EXPECT_EQ(r.total.compiles, 1u) << "round " << round;
    EXPECT_EQ(r.total.misses, 1u) << "round " << round;
    EXPECT_EQ(r.total.hits, static_cast<uint64_t>(kProcesses - 1)) << "round " << round;
    EXPECT_EQ(r.total.stores, 1u) << "round " << round;
    EXPECT_EQ(r.total.store_failures, 0u);
    EXPECT_EQ(r.total.corrupt, 0u);
    waits += r.total.lock_waits;
    // Every lock file was unlinked by its last holder.
    EXPECT_THAT(FilesUnder(LockDir(root_)), IsEmpty()) << "round " << round;
  }
  // Processes did meet on the lock; otherwise this proved nothing.
  EXPECT_GT(waits, 0u);
  EXPECT_EQ(FilesUnder(root_).size(), static_cast<size_t>(kRounds));
}

// RELIABILITY 7: locking fails with EPERM in every process.
TEST_F(MultiProcessTest, WithoutLockingResultsStayCorrectOnlyWorkIsDuplicated) {
  int total_creates = 0;
  for (int round = 0; round < kRounds; ++round) {
    Round r = RunRound(round, {"--lock-fault=eperm"});
    EXPECT_GE(r.creates, 1) << "round " << round;
    EXPECT_LE(r.creates, kProcesses) << "round " << round;
    EXPECT_EQ(r.total.compiles, static_cast<uint64_t>(r.creates));
    EXPECT_EQ(r.total.lock_waits, 0u);
    EXPECT_EQ(r.total.corrupt, 0u);
    total_creates += r.creates;
  }
  std::printf("creates without locking: %d over %d rounds\n", total_creates, kRounds);
  EXPECT_EQ(FilesUnder(root_).size(), static_cast<size_t>(kRounds));
}

// RELIABILITY 7: the lock directory cannot be used (a file sits there).
TEST_F(MultiProcessTest, UnusableLockDirectoryStillGivesCorrectResults) {
  ASSERT_EQ(DiskCache::Open(TestSettings(root_))->mode(), CacheMode::kReadWrite);
  ASSERT_EQ(::rmdir(LockDir(root_).c_str()), 0);
  WriteBytes(LockDir(root_), "not a directory");
  for (int round = 0; round < 5; ++round) {
    Round r = RunRound(round, {});
    EXPECT_GE(r.creates, 1);
    EXPECT_EQ(r.total.lock_waits, 0u);
  }
}

// RELIABILITY 8: a holder killed mid-compile frees the key at once.
TEST_F(MultiProcessTest, DeadHoldersLockIsTakenOverAtOnce) {
  const std::string key = "arch=sm_90a\nstale lock";
  const std::string creates = dir_.Sub("creates");
  WorkerGroup holder_group;
  pid_t holder = holder_group.Spawn(
      {"--root=" + root_, "--key=" + key, "--creates=" + creates, "--create-forever"});
  holder_group.Release();
  ASSERT_TRUE(holder_group.WaitForSignals('c', 1)) << "holder never started creating";

  WorkerGroup waiter_group;
  pid_t waiter = waiter_group.Spawn({"--root=" + root_, "--key=" + key, "--creates=" + creates,
                                     "--stats=" + dir_.Sub("stats"), "--lock-timeout-ms=60000"});
  waiter_group.Release();
  absl::SleepFor(absl::Milliseconds(300));  // the waiter is now waiting on the lock
  EXPECT_TRUE(waiter_group.Running(waiter));
  ::kill(holder, SIGKILL);
  EXPECT_EQ(holder_group.Wait(holder), 128 + SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  EXPECT_EQ(waiter_group.Wait(waiter), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - killed, std::chrono::seconds(10));
  EXPECT_EQ(CountLines(creates), 2);  // the dead holder's and the waiter's
  Stats s = ReadStats(dir_.Sub("stats"));
  EXPECT_EQ(s.lock_waits, 1u);
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.stores, 1u);
  EXPECT_THAT(TempFilesUnder(root_), IsEmpty());
}

// RELIABILITY 8: a live holder keeps its lock; the waiter gives up waiting
// after its time limit and compiles for itself.
TEST_F(MultiProcessTest, LiveHolderIsNotBrokenWaiterTimesOutAndCompiles) {
  const std::string key = "arch=sm_90a\nlive holder";
  const std::string creates = dir_.Sub("creates");
  WorkerGroup group;
  pid_t holder =
      group.Spawn({"--root=" + root_, "--key=" + key, "--creates=" + creates, "--create-forever"});
  group.Release();
  ASSERT_TRUE(group.WaitForSignals('c', 1));

  WorkerGroup waiter_group;
  auto start = std::chrono::steady_clock::now();
  pid_t waiter = waiter_group.Spawn({"--root=" + root_, "--key=" + key, "--creates=" + creates,
                                     "--stats=" + dir_.Sub("stats"), "--lock-timeout-ms=500"});
  waiter_group.Release();
  EXPECT_EQ(waiter_group.Wait(waiter), 0);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  Stats s = ReadStats(dir_.Sub("stats"));
  EXPECT_EQ(s.lock_waits, 1u);
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(CountLines(creates), 2);

  // The holder is alive and still holds its lock.
  EXPECT_TRUE(group.Running(holder));
  const std::string lock_path = LockPath(root_, EntryKind::kCubin, MakeCacheKey(key));
  int fd = ::open(lock_path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(::flock(fd, LOCK_EX | LOCK_NB), -1);
  EXPECT_EQ(errno, EWOULDBLOCK);
  ::close(fd);
}

// The usual case of RELIABILITY 8: the waiter gets the holder's entry.
TEST_F(MultiProcessTest, WaiterUsesTheEntryTheHolderPublished) {
  const std::string key = "arch=sm_90a\nslow compile";
  const std::string creates = dir_.Sub("creates");
  WorkerGroup group;
  pid_t holder =
      group.Spawn({"--root=" + root_, "--key=" + key, "--creates=" + creates, "--create-ms=700"});
  group.Release();
  ASSERT_TRUE(group.WaitForSignals('c', 1));
  WorkerGroup waiter_group;
  pid_t waiter = waiter_group.Spawn({"--root=" + root_, "--key=" + key, "--creates=" + creates,
                                     "--stats=" + dir_.Sub("stats"), "--out=" + dir_.Sub("out")});
  waiter_group.Release();
  EXPECT_EQ(waiter_group.Wait(waiter), 0);
  EXPECT_EQ(group.Wait(holder), 0);
  EXPECT_EQ(CountLines(creates), 1);
  Stats s = ReadStats(dir_.Sub("stats"));
  EXPECT_EQ(s.compiles, 0u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.lock_waits, 1u);
  EXPECT_EQ(ReadBytes(dir_.Sub("out")), PayloadFor(key, 65536));
}

// RELIABILITY 15: concurrent writers of different problems lose nothing.
TEST_F(MultiProcessTest, ConcurrentTuningRecordWritersLoseNothing) {
  constexpr int kRecords = 25;
  WorkerGroup group;
  for (int i = 0; i < kProcesses; ++i) {
    group.Spawn({"--root=" + root_, absl::StrCat("--key=problem", i),
                 absl::StrCat("--tuning-records=", kRecords)});
  }
  ASSERT_TRUE(group.WaitForSignals('r', kProcesses));
  group.Release();
  EXPECT_THAT(group.WaitAll(), Each(0));
  auto cache = DiskCache::Open(TestSettings(root_));
  int found = 0;
  for (int i = 0; i < kProcesses; ++i) {
    for (int j = 0; j < kRecords; ++j) {
      std::string problem = absl::StrCat("problem", i, "-", j);
      std::optional<std::string> json =
          cache->Lookup(MakeCacheKey("tuning:" + problem), EntryKind::kTuningRecord);
      if (!json) continue;
      absl::StatusOr<TuningRecord> r = TuningRecord::FromJson(*json);
      ASSERT_THAT(r, IsOk());
      EXPECT_EQ(r->problem_signature, problem);
      ++found;
    }
  }
  EXPECT_EQ(found, kProcesses * kRecords);
  EXPECT_THAT(TempFilesUnder(root_), IsEmpty());
}

}  // namespace
}  // namespace jitgemm::cache
