// RELIABILITY 5: a writer that dies at any step of publishing (temp created,
// mid-write, before rename) never makes a partial entry visible, and its
// orphan temp file is removed only once it is old. Both simulated in-process
// (FaultEnv goes dead) and with a real process killed by SIGKILL.
#include <signal.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "cache/disk_cache.h"
#include "cache/fault_env.h"
#include "cache/layout.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"
#include "tests/cache/worker_group.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::Exists;
using ::jitgemm::cache::testing::FilesUnder;
using ::jitgemm::cache::testing::IsOk;
using ::jitgemm::cache::testing::PayloadFor;
using ::jitgemm::cache::testing::ReadBytes;
using ::jitgemm::cache::testing::ScratchDir;
using ::jitgemm::cache::testing::SetMtime;
using ::jitgemm::cache::testing::TempFilesUnder;
using ::jitgemm::cache::testing::TestSettings;
using ::jitgemm::cache::testing::WorkerGroup;
using ::testing::IsEmpty;
using ::testing::SizeIs;

struct CrashCase {
  CrashPoint point;
  const char* worker_flag;
  const char* name;
};

class CrashTest : public ::testing::TestWithParam<CrashCase> {
 protected:
  // After the crash: nothing published, one orphan temp file of the size
  // the crash point implies; then cleanup respects the age limit and a
  // survivor publishes normally.
  void CheckAftermath(const CacheKey& key, size_t payload_bytes) {
    const std::string entry = EntryPath(root_, EntryKind::kCubin, key);
    EXPECT_FALSE(Exists(entry));
    std::vector<std::string> temps = TempFilesUnder(root_);
    ASSERT_THAT(temps, SizeIs(1));
    const std::string temp = root_ + "/" + temps[0];
    const size_t full =
        EncodeEntry(key, EntryKind::kCubin, PayloadFor(key.text, payload_bytes)).size();
    const size_t temp_size = ReadBytes(temp).size();
    switch (GetParam().point) {
      case CrashPoint::kTempCreated:
        EXPECT_EQ(temp_size, 0u);
        break;
      case CrashPoint::kMidWrite:
        EXPECT_EQ(temp_size, full / 2);
        break;
      default:
        EXPECT_EQ(temp_size, full);
        break;
    }

    auto survivor = DiskCache::Open(TestSettings(root_));
    EXPECT_EQ(survivor->Lookup(key, EntryKind::kCubin), std::nullopt);
    EXPECT_EQ(survivor->counters().corrupt, 0u);  // the temp file was never looked at
    // Young: it might belong to a live writer, so it stays.
    survivor->CleanTempFiles(absl::Hours(1));
    EXPECT_TRUE(Exists(temp));
    SetMtime(temp, absl::Now() - absl::Minutes(59));
    survivor->CleanTempFiles(absl::Hours(1));
    EXPECT_TRUE(Exists(temp));
    SetMtime(temp, absl::Now() - absl::Hours(2));
    survivor->CleanTempFiles(absl::Hours(1));
    EXPECT_FALSE(Exists(temp));

    int calls = 0;
    absl::StatusOr<std::string> got = survivor->GetOrCreate(key, EntryKind::kCubin, [&] {
      ++calls;
      return absl::StatusOr<std::string>(PayloadFor(key.text, payload_bytes));
    });
    ASSERT_THAT(got, IsOk());
    EXPECT_EQ(*got, PayloadFor(key.text, payload_bytes));
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(Exists(entry));
    EXPECT_THAT(TempFilesUnder(root_), IsEmpty());
  }

  ScratchDir dir_;
  std::string root_ = dir_.Sub("cache");
};

TEST_P(CrashTest, SimulatedCrashLeavesNoVisibleEntry) {
  const CacheKey key = MakeCacheKey(absl::StrCat("crash in process at ", GetParam().name));
  FaultEnv env(Env::Default());
  auto cache = DiskCache::Open(TestSettings(root_), &env);
  env.CrashAt(GetParam().point);
  cache->Store(key, EntryKind::kCubin, PayloadFor(key.text, 10000));
  ASSERT_TRUE(env.crashed());
  // The dead writer removed nothing: its env refused.
  EXPECT_EQ(cache->counters().stores, 0u);
  CheckAftermath(key, 10000);
}

TEST_P(CrashTest, KilledProcessLeavesNoVisibleEntry) {
  const std::string text = absl::StrCat("crash of a real process at ", GetParam().name);
  WorkerGroup group;
  pid_t pid = group.Spawn({"--root=" + root_, "--key=" + text, "--payload-bytes=10000",
                           absl::StrCat("--kill-at=", GetParam().worker_flag)});
  group.Release();
  EXPECT_EQ(group.Wait(pid), 128 + SIGKILL);
  // It died holding the key's lock. The kernel released the lock, so the
  // survivor below does not wait; the abandoned lock file, once old, is
  // cleaned because nobody holds it.
  std::vector<std::string> locks = FilesUnder(LockDir(root_));
  ASSERT_THAT(locks, SizeIs(1));
  SetMtime(LockDir(root_) + "/" + locks[0], absl::Now() - absl::Hours(2));
  DiskCache::Open(TestSettings(root_))->CleanTempFiles(absl::Hours(1));
  EXPECT_THAT(FilesUnder(LockDir(root_)), IsEmpty());
  CheckAftermath(MakeCacheKey(text), 10000);
}

INSTANTIATE_TEST_SUITE_P(
    Points, CrashTest,
    ::testing::Values(CrashCase{CrashPoint::kTempCreated, "temp", "TempCreated"},
                      CrashCase{CrashPoint::kMidWrite, "mid", "MidWrite"},
                      CrashCase{CrashPoint::kBeforeRename, "rename", "BeforeRename"}),
    [](const ::testing::TestParamInfo<CrashCase>& info) { return info.param.name; });

TEST(CleanTempFilesTest, KeepsEntriesAndHeldLocks) {
  ScratchDir dir;
  const std::string root = dir.Sub("cache");
  auto cache = DiskCache::Open(TestSettings(root));
  CacheKey key = MakeCacheKey("k");
  cache->Store(key, EntryKind::kCubin, "entry");
  SetMtime(EntryPath(root, EntryKind::kCubin, key), absl::Now() - absl::Hours(100));
  const std::string held = LockPath(root, EntryKind::kCubin, MakeCacheKey("held"));
  absl::StatusOr<std::unique_ptr<FileLock>> lock = Env::Default()->TryLockFile(held);
  ASSERT_THAT(lock, IsOk());
  SetMtime(held, absl::Now() - absl::Hours(100));
  cache->CleanTempFiles(absl::Hours(1));
  EXPECT_TRUE(Exists(EntryPath(root, EntryKind::kCubin, key)));
  EXPECT_TRUE(Exists(held));  // a live holder's lock is never removed
}

TEST(CleanTempFilesTest, FirstStoreOfAProcessClearsOldOrphans) {
  ScratchDir dir;
  const std::string root = dir.Sub("cache");
  CacheKey key = MakeCacheKey("orphaned");
  ASSERT_THAT(Env::Default()->CreateDirs(ShardDir(root, EntryKind::kCubin, key)), IsOk());
  const std::string old_temp = TempPath(root, EntryKind::kCubin, key, 4242, 1);
  const std::string young_temp = TempPath(root, EntryKind::kCubin, key, 4242, 2);
  testing::WriteBytes(old_temp, "half an entry");
  testing::WriteBytes(young_temp, "being written");
  SetMtime(old_temp, absl::Now() - absl::Hours(3));
  auto cache = DiskCache::Open(TestSettings(root));
  cache->Store(MakeCacheKey("something else"), EntryKind::kCubin, "x");
  EXPECT_FALSE(Exists(old_temp));
  EXPECT_TRUE(Exists(young_temp));
}

}  // namespace
}  // namespace jitgemm::cache
