// Caches that cannot be written (RELIABILITY 10) or used at all (11): hits
// still served where possible, misses compiled in memory, nothing written,
// and one clear warning.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "absl/strings/str_cat.h"
#include "cache/disk_cache.h"
#include "cache/fault_env.h"
#include "cache/layout.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/disk_cache_fixture.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::ChmodTree;
using ::jitgemm::cache::testing::CountWarnings;
using ::jitgemm::cache::testing::DiskCacheTest;
using ::jitgemm::cache::testing::Exists;
using ::jitgemm::cache::testing::FilesUnder;
using ::jitgemm::cache::testing::IsOk;
using ::jitgemm::cache::testing::PayloadFor;
using ::jitgemm::cache::testing::ReadBytes;
using ::jitgemm::cache::testing::StatusIs;
using ::jitgemm::cache::testing::TestSettings;
using ::jitgemm::cache::testing::WriteBytes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

// RELIABILITY 10: a cache whose filesystem refuses writes.
TEST_F(DiskCacheTest, ReadOnlyFilesystemServesHitsAndWritesNothing) {
  OpenCache()->Store(key_, EntryKind::kCubin, "warm");
  const std::vector<std::string> before = FilesUnder(root_);
  FaultEnv env(Env::Default());
  env.SetReadOnly(true);
  ::testing::internal::CaptureStderr();
  auto cache = OpenCache(&env);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(cache->mode(), CacheMode::kReadOnly);
  EXPECT_EQ(CountWarnings(err), 1) << err;
  EXPECT_THAT(err, HasSubstr("read-only"));

  EXPECT_THAT(cache->Lookup(key_, EntryKind::kCubin), Optional(std::string("warm")));
  int calls = 0;
  absl::StatusOr<std::string> got =
      cache->GetOrCreate(key2_, EntryKind::kCubin, Creator(key2_, &calls));
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(*got, PayloadFor(key2_.text, 5000));
  EXPECT_EQ(calls, 1);
  cache->Store(key2_, EntryKind::kCubin, "x");
  EXPECT_EQ(FilesUnder(root_), before);
  CacheCounters c = cache->counters();
  EXPECT_EQ(c.stores, 0u);
  EXPECT_EQ(c.store_failures, 0u);
  EXPECT_EQ(env.calls(FaultOp::kCreate), 0);
  EXPECT_EQ(env.calls(FaultOp::kRename), 0);
  EXPECT_EQ(env.calls(FaultOp::kRemove), 0);
  EXPECT_EQ(env.calls(FaultOp::kSetModTime), 0);
  EXPECT_EQ(env.calls(FaultOp::kLock), 0);
}

TEST_F(DiskCacheTest, ChmodReadOnlyTreeServesHitsAndWritesNothing) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores permission bits; see the FaultEnv variant";
  OpenCache()->Store(key_, EntryKind::kCubin, "warm");
  ChmodTree(root_, 0444);
  const std::vector<std::string> before = FilesUnder(root_);
  auto cache = OpenCache();
  EXPECT_EQ(cache->mode(), CacheMode::kReadOnly);
  EXPECT_THAT(cache->Lookup(key_, EntryKind::kCubin), Optional(std::string("warm")));
  int calls = 0;
  EXPECT_THAT(cache->GetOrCreate(key2_, EntryKind::kCubin, Creator(key2_, &calls)), IsOk());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(FilesUnder(root_), before);
}

TEST_F(DiskCacheTest, ReadOnlyModeWritesNothing) {
  OpenCache()->Store(key_, EntryKind::kCubin, "warm");
  const std::vector<std::string> before = FilesUnder(root_);
  CacheSettings s = TestSettings(root_);
  s.mode = CacheMode::kReadOnly;
  ::testing::internal::CaptureStderr();
  auto cache = DiskCache::Open(s);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(cache->mode(), CacheMode::kReadOnly);
  EXPECT_THAT(cache->Lookup(key_, EntryKind::kCubin), Optional(std::string("warm")));
  int calls = 0;
  EXPECT_THAT(cache->GetOrCreate(key2_, EntryKind::kCubin, Creator(key2_, &calls)), IsOk());
  EXPECT_THAT(cache->Prune(0),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("readonly")));
  EXPECT_EQ(FilesUnder(root_), before);
}

TEST_F(DiskCacheTest, OffModeTouchesNoDisk) {
  OpenCache()->Store(key_, EntryKind::kCubin, "warm");
  CacheSettings s = TestSettings(root_);
  s.mode = CacheMode::kOff;
  FaultEnv env(Env::Default());
  auto cache = DiskCache::Open(s, &env);
  EXPECT_EQ(cache->mode(), CacheMode::kOff);
  EXPECT_EQ(cache->Lookup(key_, EntryKind::kCubin), std::nullopt);
  int calls = 0;
  EXPECT_THAT(cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls)), IsOk());
  EXPECT_EQ(calls, 1);
  for (int op = 0; op < static_cast<int>(FaultOp::kNumOps); ++op) {
    EXPECT_EQ(env.calls(static_cast<FaultOp>(op)), 0) << op;
  }
}

TEST_F(DiskCacheTest, ReadOnlyRootsAreSearchedFirstAndNeverModified) {
  const std::string bundle = dir_.Sub("bundle");
  CacheSettings bs = TestSettings(bundle);
  auto writer = DiskCache::Open(bs);
  writer->Store(key_, EntryKind::kCubin, "from bundle");
  writer->Store(key2_, EntryKind::kCubin, "corrupt soon");
  std::string p2 = EntryPath(bundle, EntryKind::kCubin, key2_);
  WriteBytes(p2, ReadBytes(p2).substr(0, 20));
  const std::vector<std::string> bundle_files = FilesUnder(bundle);

  OpenCache()->Store(key_, EntryKind::kCubin, "from writable");
  CacheSettings s = TestSettings(root_);
  s.readonly_roots = {bundle};
  auto cache = DiskCache::Open(s);
  EXPECT_THAT(cache->readonly_roots(), ElementsAre(bundle));
  EXPECT_THAT(cache->Lookup(key_, EntryKind::kCubin), Optional(std::string("from bundle")));
  // Corrupt in the bundle: counted, left alone, and the writable root serves.
  int calls = 0;
  absl::StatusOr<std::string> got =
      cache->GetOrCreate(key2_, EntryKind::kCubin, Creator(key2_, &calls));
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(cache->counters().corrupt, 1u);
  EXPECT_EQ(FilesUnder(bundle), bundle_files);
  EXPECT_TRUE(Exists(PathOf(key2_)));
}

TEST_F(DiskCacheTest, UntrustedReadOnlyRootIsIgnoredWithAWarning) {
  const std::string bundle = dir_.Sub("bundle");
  DiskCache::Open(TestSettings(bundle))->Store(key_, EntryKind::kCubin, "planted");
  ASSERT_EQ(::chmod(bundle.c_str(), 0777), 0);
  CacheSettings s = TestSettings(root_);
  s.readonly_roots = {bundle, dir_.Sub("missing")};
  ::testing::internal::CaptureStderr();
  auto cache = DiskCache::Open(s);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(CountWarnings(err), 2) << err;
  EXPECT_THAT(err, HasSubstr("writable by every user"));
  EXPECT_THAT(cache->readonly_roots(), IsEmpty());
  EXPECT_EQ(cache->Lookup(key_, EntryKind::kCubin), std::nullopt);
}

// Issue 19, item 7: 8,000 missing read-only roots printed 8,000 lines, and
// a root's name went to the terminal raw (newlines, escape sequences).
TEST_F(DiskCacheTest, MissingReadOnlyRootsAreOneEscapedLine) {
  CacheSettings s = TestSettings(root_);
  s.readonly_roots.push_back(dir_.Sub("evil\n\x1b[2Jname"));
  for (int i = 0; i < 8000; ++i)
    s.readonly_roots.push_back(dir_.Sub(absl::StrCat("absent", i % 4000)));
  ::testing::internal::CaptureStderr();
  auto cache = DiskCache::Open(s);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(CountWarnings(err), 1) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(err.find('\x1b'), std::string::npos);
  EXPECT_THAT(err, HasSubstr("4001 read-only cache roots that do not exist"));
  EXPECT_THAT(err, HasSubstr("evil\\n\\x1b[2Jname"));
  EXPECT_THAT(err, HasSubstr("and 3998 more"));
}

// RELIABILITY 11: unusable roots degrade to pass-through with one warning.
class UnusableRootTest : public DiskCacheTest {
 protected:
  void ExpectPassThrough(const std::string& root, const std::string& why) {
    CacheSettings s = TestSettings(root);
    ::testing::internal::CaptureStderr();
    auto cache = DiskCache::Open(s);
    int calls = 0;
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<std::string> got =
          cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls));
      ASSERT_THAT(got, IsOk());
      EXPECT_EQ(*got, PayloadFor(key_.text, 5000));
    }
    cache->Store(key2_, EntryKind::kCubin, "x");
    EXPECT_EQ(cache->Lookup(key2_, EntryKind::kCubin), std::nullopt);
    EXPECT_THAT(cache->Prune(0), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("off")));
    cache->CleanTempFiles(absl::ZeroDuration());
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(CountWarnings(err), 1) << err;
    EXPECT_THAT(err, HasSubstr(root));
    EXPECT_THAT(err, HasSubstr(why));
    EXPECT_THAT(err, HasSubstr("JITGEMM_CACHE_DIR"));
    EXPECT_EQ(cache->mode(), CacheMode::kOff);
    EXPECT_EQ(calls, 2);  // no disk, so each call compiles
    CacheCounters c = cache->counters();
    EXPECT_EQ(c.stores, 0u);
    EXPECT_EQ(c.store_failures, 0u);
    EXPECT_EQ(c.compiles, 2u);
  }
};

TEST_F(UnusableRootTest, RegularFile) {
  WriteBytes(root_, "not a directory");
  ExpectPassThrough(root_, "not a directory");
  EXPECT_EQ(ReadBytes(root_), "not a directory");
}

TEST_F(UnusableRootTest, Uncreatable) {
  WriteBytes(dir_.Sub("file"), "");
  ExpectPassThrough(dir_.Sub("file/cache"), "cannot be created");
}

TEST_F(UnusableRootTest, WritableByOtherUsers) {
  ASSERT_EQ(::mkdir(root_.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(root_.c_str(), 0777), 0);
  ExpectPassThrough(root_, "writable by every user (mode 0777)");
  EXPECT_THAT(FilesUnder(root_), IsEmpty());
}

TEST_F(UnusableRootTest, WorldWritableLayoutDirectory) {
  OpenCache();
  ASSERT_EQ(::chmod((root_ + "/v1/cubin").c_str(), 0777), 0);
  ExpectPassThrough(root_, "writable by every user");
}

TEST_F(UnusableRootTest, OwnedByAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown";
  ASSERT_EQ(::mkdir(root_.c_str(), 0755), 0);
  ASSERT_EQ(::chown(root_.c_str(), 12345, 12345), 0);
  ExpectPassThrough(root_, "belongs to uid 12345");
}

TEST_F(UnusableRootTest, SymlinkToAPrivateDirectoryIsAccepted) {
  const std::string target = dir_.Sub("elsewhere");
  ASSERT_EQ(::mkdir(target.c_str(), 0755), 0);
  ASSERT_EQ(::symlink(target.c_str(), root_.c_str()), 0);
  ::testing::internal::CaptureStderr();
  auto cache = OpenCache();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(cache->mode(), CacheMode::kReadWrite);
  cache->Store(key_, EntryKind::kCubin, "through the link");
  EXPECT_THAT(cache->Lookup(key_, EntryKind::kCubin), Optional(std::string("through the link")));
  EXPECT_TRUE(Exists(EntryPath(target, EntryKind::kCubin, key_)));
}

TEST_F(UnusableRootTest, GroupWritableIsAccepted) {
  ASSERT_EQ(::mkdir(root_.c_str(), 0775), 0);
  ASSERT_EQ(::chmod(root_.c_str(), 0775), 0);
  ::testing::internal::CaptureStderr();
  auto cache = OpenCache();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(cache->mode(), CacheMode::kReadWrite);
}

}  // namespace
}  // namespace jitgemm::cache
