// RELIABILITY 12: ENOSPC / EDQUOT mid-write, EXDEV / EBUSY on rename and
// friends: nothing reaches the caller, the temp file is removed, a valid
// published entry is accepted.
#include <cerrno>
#include <string>

#include "cache/disk_cache.h"
#include "cache/fault_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/disk_cache_fixture.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::CountWarnings;
using ::jitgemm::cache::testing::DiskCacheTest;
using ::jitgemm::cache::testing::Exists;
using ::jitgemm::cache::testing::IsOk;
using ::jitgemm::cache::testing::PayloadFor;
using ::jitgemm::cache::testing::ReadBytes;
using ::jitgemm::cache::testing::TempFilesUnder;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

// RELIABILITY 12: failing disks never reach the caller.
class FailingDiskTest : public DiskCacheTest {
 protected:
  // Stores through `env` and checks the failure was swallowed and cleaned.
  void ExpectSwallowed(FaultEnv* env, int expected_failures, int expected_stores = 0) {
    ::testing::internal::CaptureStderr();
    auto cache = OpenCache(env);
    int calls = 0;
    absl::StatusOr<std::string> got =
        cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls));
    ASSERT_THAT(got, IsOk());
    EXPECT_EQ(*got, PayloadFor(key_.text, 5000));
    cache->Store(key2_, EntryKind::kCubin, "second");
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(CountWarnings(err), 1) << err;  // logged once, not per failure
    EXPECT_THAT(err, HasSubstr("could not store"));
    CacheCounters c = cache->counters();
    EXPECT_EQ(c.store_failures, static_cast<uint64_t>(expected_failures));
    EXPECT_EQ(c.stores, static_cast<uint64_t>(expected_stores));
    EXPECT_THAT(TempFilesUnder(root_), IsEmpty());
    EXPECT_FALSE(Exists(PathOf(key_)));
  }
};

TEST_F(FailingDiskTest, NoSpaceMidWrite) {
  FaultEnv env(Env::Default());
  env.FailAppendAfter(50, ENOSPC);
  ExpectSwallowed(&env, 2);
}

TEST_F(FailingDiskTest, QuotaExceededMidWrite) {
  FaultEnv env(Env::Default());
  env.FailAppendAfter(3000, EDQUOT);
  ExpectSwallowed(&env, 1, 1);  // "second" fits under 3000 bytes
  EXPECT_TRUE(Exists(PathOf(key2_)));
}

TEST_F(FailingDiskTest, SyncFails) {
  FaultEnv env(Env::Default());
  env.FailOp(FaultOp::kSync, EIO);
  ExpectSwallowed(&env, 2);
}

TEST_F(FailingDiskTest, CrossDeviceRename) {
  FaultEnv env(Env::Default());
  env.FailOp(FaultOp::kRename, EXDEV);
  ExpectSwallowed(&env, 2);
}

TEST_F(FailingDiskTest, BusyRename) {
  FaultEnv env(Env::Default());
  env.FailOp(FaultOp::kRename, EBUSY);
  ExpectSwallowed(&env, 2);
}

TEST_F(FailingDiskTest, TempFileCannotBeCreated) {
  FaultEnv env(Env::Default());
  env.FailOp(FaultOp::kCreate, ENOSPC);
  ExpectSwallowed(&env, 2);
}

TEST_F(FailingDiskTest, FailedRenameAcceptsAValidPublishedEntry) {
  // Another writer published the same key; our rename fails with EBUSY.
  OpenCache()->Store(key_, EntryKind::kCubin, PayloadFor(key_.text, 5000));
  const std::string published = ReadBytes(PathOf(key_));
  FaultEnv env(Env::Default());
  env.FailOp(FaultOp::kRename, EBUSY);
  ::testing::internal::CaptureStderr();
  auto cache = OpenCache(&env);
  cache->Store(key_, EntryKind::kCubin, PayloadFor(key_.text, 5000));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(cache->counters().store_failures, 0u);
  EXPECT_THAT(TempFilesUnder(root_), IsEmpty());
  EXPECT_EQ(ReadBytes(PathOf(key_)), published);
  EXPECT_THAT(cache->Lookup(key_, EntryKind::kCubin), Optional(PayloadFor(key_.text, 5000)));
}

TEST_F(FailingDiskTest, FailedStoreLeavesThePreviousEntryServed) {
  OpenCache()->Store(key_, EntryKind::kCubin, "old and valid");
  FaultEnv env(Env::Default());
  env.FailAppendAfter(10, ENOSPC);
  ::testing::internal::CaptureStderr();
  auto cache = OpenCache(&env);
  cache->Store(key_, EntryKind::kCubin, "new");
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(cache->counters().store_failures, 1u);
  EXPECT_THAT(cache->Lookup(key_, EntryKind::kCubin), Optional(std::string("old and valid")));
  EXPECT_THAT(TempFilesUnder(root_), IsEmpty());
}

TEST_F(FailingDiskTest, SilentlyTruncatedWriteIsCaughtOnRead) {
  FaultEnv env(Env::Default());
  env.TruncateWritesAt(64);
  auto cache = OpenCache(&env);
  cache->Store(key_, EntryKind::kCubin, PayloadFor("p", 1000));
  EXPECT_EQ(cache->counters().stores, 1u);  // the disk lied
  EXPECT_EQ(ReadBytes(PathOf(key_)).size(), 64u);
  auto reader = OpenCache();
  EXPECT_EQ(reader->Lookup(key_, EntryKind::kCubin), std::nullopt);
  EXPECT_EQ(reader->counters().corrupt, 1u);
  EXPECT_FALSE(Exists(PathOf(key_)));
}

TEST_F(FailingDiskTest, UnreadableEntryIsAPlainMiss) {
  auto cache = OpenCache();
  cache->Store(key_, EntryKind::kCubin, "x");
  FaultEnv env(Env::Default());
  env.FailOp(FaultOp::kRead, EIO);
  auto reader = OpenCache(&env);
  EXPECT_EQ(reader->Lookup(key_, EntryKind::kCubin), std::nullopt);
  EXPECT_EQ(reader->counters().corrupt, 0u);
  EXPECT_TRUE(Exists(PathOf(key_)));  // not the entry's fault: kept
}

TEST_F(FailingDiskTest, OversizedEntryIsRefusedNotWritten) {
  auto cache = OpenCache();
  cache->Store(key_, EntryKind::kCubin, std::string(kMaxEntryFileBytes, 'x'));
  EXPECT_EQ(cache->counters().store_failures, 1u);
  EXPECT_EQ(cache->counters().stores, 0u);
  EXPECT_THAT(TempFilesUnder(root_), IsEmpty());
  EXPECT_FALSE(Exists(PathOf(key_)));
}

}  // namespace
}  // namespace jitgemm::cache
