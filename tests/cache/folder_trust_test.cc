// Issue 19, items 1 and 2: every folder from a cache root down to an entry is
// checked by owner and mode and never followed through a symlink, in
// read-only and writable roots alike; a failing folder disables the root with
// one warning, and nothing outside the root is ever written or deleted.
// Every test here failed before the fix (see the closing note).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "cache/disk_cache.h"
#include "cache/entry.h"
#include "cache/layout.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/disk_cache_fixture.h"
#include "tests/cache/second_user.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {
namespace {

namespace fs = std::filesystem;
using ::jitgemm::cache::testing::CountWarnings;
using ::jitgemm::cache::testing::DiskCacheTest;
using ::jitgemm::cache::testing::FilesUnder;
using ::jitgemm::cache::testing::PayloadFor;
using ::jitgemm::cache::testing::ReadBytes;
using ::jitgemm::cache::testing::SecondUser;
using ::jitgemm::cache::testing::SetMtime;
using ::jitgemm::cache::testing::TestSettings;
using ::jitgemm::cache::testing::WriteBytes;
using ::testing::HasSubstr;
using ::testing::Optional;

// Every file under `dir` with its bytes: what "nothing outside the root was
// written or deleted" compares.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const std::string& f : FilesUnder(dir)) out[f] = ReadBytes(dir + "/" + f);
  return out;
}

std::string ShardOf(const std::string& root, const CacheKey& key) {
  return ShardDir(root, EntryKind::kCubin, key);
}

class FolderTrustTest : public DiskCacheTest {
 protected:
  // A read-only root holding key_ ("genuine"), as a warmed bundle would.
  std::string MakeReadOnlyRoot() {
    const std::string ro = dir_.Sub("ro");
    DiskCache::Open(TestSettings(ro))->Store(key_, EntryKind::kCubin, "genuine");
    return ro;
  }
  std::shared_ptr<DiskCache> OpenWith(const std::string& ro, std::string* err) {
    CacheSettings s = TestSettings(root_);
    s.readonly_roots = {ro};
    ::testing::internal::CaptureStderr();
    std::shared_ptr<DiskCache> cache = DiskCache::Open(s);
    *err = ::testing::internal::GetCapturedStderr();
    return cache;
  }
  // A folder outside every root, world-writable like /tmp, holding what a
  // hostile user would plant: a forged entry for key2_ and an old temp file.
  std::string MakeElsewhere() {
    const std::string elsewhere = dir_.Sub("elsewhere");
    fs::create_directories(elsewhere);
    ::chmod(elsewhere.c_str(), 0777);
    WriteBytes(elsewhere + "/" + key2_.Hex() + ".bin",
               EncodeEntry(key2_, EntryKind::kCubin, "forged"));
    WriteBytes(elsewhere + "/" + key_.Hex() + ".bin",
               EncodeEntry(key_, EntryKind::kCubin, "forged"));
    WriteBytes(elsewhere + "/" + key2_.Hex() + ".tmp.1.ab", "someone's file");
    SetMtime(elsewhere + "/" + key2_.Hex() + ".tmp.1.ab", absl::Now() - absl::Hours(5));
    return elsewhere;
  }
  // Replaces key_'s shard folder of `root` by a symlink to `target`.
  void LinkShard(const std::string& root, const std::string& target) {
    fs::remove_all(ShardOf(root, key_));
    fs::create_directory_symlink(target, ShardOf(root, key_));
  }
};

// ------------------------------------------------------------ read-only roots

TEST_F(FolderTrustTest, ReadOnlyRootWithWorldWritableShardIsIgnoredAndForgeryNotServed) {
  const std::string ro = MakeReadOnlyRoot();
  ::chmod(ShardOf(ro, key_).c_str(), 0777);  // as `tar -xf` run as root keeps it
  // Anyone may now swap the entry for one with a right checksum.
  WriteBytes(EntryPath(ro, EntryKind::kCubin, key_) + ".new",
             EncodeEntry(key_, EntryKind::kCubin, "forged"));
  fs::rename(EntryPath(ro, EntryKind::kCubin, key_) + ".new",
             EntryPath(ro, EntryKind::kCubin, key_));
  std::string err;
  auto cache = OpenWith(ro, &err);
  EXPECT_TRUE(cache->readonly_roots().empty());
  EXPECT_EQ(CountWarnings(err), 1) << err;
  EXPECT_THAT(err, HasSubstr(ShardOf(ro, key_)));
  EXPECT_THAT(err, HasSubstr("writable by every user"));
  EXPECT_EQ(cache->Lookup(key_, EntryKind::kCubin), std::nullopt);
}

TEST_F(FolderTrustTest, ReadOnlyRootWithWorldWritableLayoutFolderIsIgnored) {
  const std::string ro = MakeReadOnlyRoot();
  ::chmod(LayoutRoot(ro).c_str(), 0777);
  std::string err;
  auto cache = OpenWith(ro, &err);
  EXPECT_TRUE(cache->readonly_roots().empty());
  EXPECT_THAT(err, HasSubstr(LayoutRoot(ro)));
  EXPECT_EQ(cache->Lookup(key_, EntryKind::kCubin), std::nullopt);
}

TEST_F(FolderTrustTest, ReadOnlyRootWithSymlinkedShardIsIgnored) {
  const std::string ro = MakeReadOnlyRoot();
  const std::string elsewhere = MakeElsewhere();
  LinkShard(ro, elsewhere);
  std::string err;
  auto cache = OpenWith(ro, &err);
  EXPECT_TRUE(cache->readonly_roots().empty());
  EXPECT_EQ(CountWarnings(err), 1) << err;
  EXPECT_THAT(err, HasSubstr("symlink"));
  EXPECT_EQ(cache->Lookup(key_, EntryKind::kCubin), std::nullopt);
}

TEST_F(FolderTrustTest, ReadOnlyRootWithShardOfAnotherUserIsIgnored) {
  SecondUser other;
  if (!other.unavailable().empty()) GTEST_SKIP() << other.unavailable();
  const std::string ro = MakeReadOnlyRoot();
  ::chmod(dir_.path().c_str(), 0755);  // mkdtemp made it 0700
  other.Own(ShardOf(ro, key_));
  // The other user really can replace the entry now (shown where the
  // folders above the scratch directory let them reach it).
  const bool reachable =
      other.RunAs([&] { return ::access(dir_.path().c_str(), X_OK) == 0 ? 0 : 1; }) == 0;
  if (reachable) {
    EXPECT_EQ(other.RunAs([&] {
      const std::string path = EntryPath(ro, EntryKind::kCubin, key_);
      return ::unlink(path.c_str()) == 0 ? 0 : 1;
    }),
              0);
  }
  WriteBytes(EntryPath(ro, EntryKind::kCubin, key_), EncodeEntry(key_, EntryKind::kCubin, "x"));
  std::string err;
  auto cache = OpenWith(ro, &err);
  EXPECT_TRUE(cache->readonly_roots().empty());
  EXPECT_THAT(err, HasSubstr(absl::StrCat("uid ", other.uid())));
}

TEST_F(FolderTrustTest, ReadOnlyRootEntryOfAnotherUserIsRefused) {
  SecondUser other;
  if (!other.unavailable().empty()) GTEST_SKIP() << other.unavailable();
  const std::string ro = MakeReadOnlyRoot();
  other.Own(EntryPath(ro, EntryKind::kCubin, key_));
  std::string err;
  auto cache = OpenWith(ro, &err);
  ASSERT_EQ(cache->readonly_roots().size(), 1u) << err;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(cache->Lookup(key_, EntryKind::kCubin), std::nullopt);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("belongs to uid"));
  EXPECT_EQ(cache->counters().corrupt, 1u);
}

// ------------------------------------------------------------ the writable root

TEST_F(FolderTrustTest, SymlinkedShardDisablesTheWritableRootAndNothingOutsideIsTouched) {
  DiskCache::Open(TestSettings(root_))->Store(key_, EntryKind::kCubin, "mine");
  const std::string elsewhere = MakeElsewhere();
  const auto before = Snapshot(elsewhere);
  LinkShard(root_, elsewhere);
  ::testing::internal::CaptureStderr();
  auto cache = OpenCache();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(cache->mode(), CacheMode::kReadWrite);
  EXPECT_EQ(CountWarnings(err), 1) << err;
  EXPECT_THAT(err, HasSubstr("symlink"));

  EXPECT_EQ(cache->Lookup(key_, EntryKind::kCubin), std::nullopt);
  cache->Store(key_, EntryKind::kCubin, "new");
  EXPECT_FALSE(cache->Prune(0).ok());
  EXPECT_FALSE(cache->Verify(/*remove_corrupt=*/true).ok());
  cache->CleanTempFiles(absl::ZeroDuration());
  EXPECT_EQ(Snapshot(elsewhere), before);
}

TEST_F(FolderTrustTest, ShardSwappedForSymlinkAfterOpenIsNeverFollowed) {
  auto cache = OpenCache();
  ASSERT_EQ(cache->mode(), CacheMode::kReadWrite);
  cache->Store(key2_, EntryKind::kCubin, "other shard");
  const std::string elsewhere = MakeElsewhere();
  const auto before = Snapshot(elsewhere);
  fs::create_directories(ShardOf(root_, key_));
  LinkShard(root_, elsewhere);

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(cache->Lookup(key_, EntryKind::kCubin), std::nullopt);  // not the forgery
  cache->Store(key_, EntryKind::kCubin, PayloadFor(key_.text, 100));
  int calls = 0;
  EXPECT_TRUE(cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls)).ok());
  EXPECT_FALSE(cache->Prune(0).ok());
  EXPECT_FALSE(cache->Verify(/*remove_corrupt=*/true).ok());
  cache->CleanTempFiles(absl::ZeroDuration());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(CountWarnings(err), 1) << err;
  EXPECT_THAT(err, HasSubstr("no longer using"));
  EXPECT_EQ(Snapshot(elsewhere), before);
  // And the entry in the sound shard was not deleted either.
  EXPECT_EQ(ReadBytes(EntryPath(root_, EntryKind::kCubin, key2_)),
            EncodeEntry(key2_, EntryKind::kCubin, "other shard"));
}

TEST_F(FolderTrustTest, SymlinkedLayoutFolderIsNotCreatedThrough) {
  const std::string elsewhere = dir_.Sub("elsewhere");
  fs::create_directories(elsewhere);
  fs::create_directories(root_);
  fs::create_directory_symlink(elsewhere, LayoutRoot(root_));
  ::testing::internal::CaptureStderr();
  auto cache = OpenCache();
  ::testing::internal::GetCapturedStderr();
  cache->Store(key_, EntryKind::kCubin, "x");
  EXPECT_NE(cache->mode(), CacheMode::kReadWrite);
  EXPECT_TRUE(FilesUnder(elsewhere).empty());
  EXPECT_TRUE(fs::is_empty(elsewhere));  // not even kind folders
}

TEST_F(FolderTrustTest, WorldWritableShardDisablesTheWritableRoot) {
  DiskCache::Open(TestSettings(root_))->Store(key_, EntryKind::kCubin, "mine");
  ::chmod(ShardOf(root_, key_).c_str(), 0777);
  ::testing::internal::CaptureStderr();
  auto cache = OpenCache();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(cache->mode(), CacheMode::kOff);
  EXPECT_EQ(CountWarnings(err), 1) << err;
  EXPECT_THAT(err, HasSubstr("writable by every user"));
}

// A locks/ folder that is a link (to a folder another user controls) would
// let them hold every key's lock: refused. A plain file there only makes
// locking unavailable (RELIABILITY 7): the root stays in use.
TEST_F(FolderTrustTest, SymlinkedLockFolderDisablesTheRootAPlainFileDoesNot) {
  ASSERT_EQ(OpenCache()->mode(), CacheMode::kReadWrite);
  const std::string elsewhere = MakeElsewhere();
  fs::remove_all(LockDir(root_));
  fs::create_directory_symlink(elsewhere, LockDir(root_));
  const auto before = Snapshot(elsewhere);
  ::testing::internal::CaptureStderr();
  auto cache = OpenCache();
  int calls = 0;
  EXPECT_TRUE(cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls)).ok());
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("symlink"));
  EXPECT_EQ(cache->mode(), CacheMode::kOff);
  EXPECT_EQ(Snapshot(elsewhere), before);

  fs::remove(LockDir(root_));
  WriteBytes(LockDir(root_), "not a folder");
  ::testing::internal::CaptureStderr();
  cache = OpenCache();
  EXPECT_TRUE(cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls)).ok());
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(cache->mode(), CacheMode::kReadWrite);
  EXPECT_EQ(cache->counters().stores, 1u);
}

class ForeignFolderTest : public FolderTrustTest,
                          public ::testing::WithParamInterface<const char*> {};

TEST_P(ForeignFolderTest, FolderOfAnotherUserDisablesTheWritableRoot) {
  SecondUser other;
  if (!other.unavailable().empty()) GTEST_SKIP() << other.unavailable();
  DiskCache::Open(TestSettings(root_))->Store(key_, EntryKind::kCubin, "mine");
  const std::string which = GetParam();
  const std::string folder = which == "shard"   ? ShardOf(root_, key_)
                             : which == "locks" ? LockDir(root_)
                                                : LayoutRoot(root_);
  other.Own(folder);
  ::testing::internal::CaptureStderr();
  auto cache = OpenCache();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(cache->mode(), CacheMode::kOff);
  EXPECT_EQ(CountWarnings(err), 1) << err;
  EXPECT_THAT(err, HasSubstr(absl::StrCat("belongs to uid ", other.uid())));
  EXPECT_THAT(err, HasSubstr(folder));
}

INSTANTIATE_TEST_SUITE_P(Folders, ForeignFolderTest, ::testing::Values("shard", "locks", "v1"));

TEST_F(FolderTrustTest, EntryOfAnotherUserInTheWritableRootIsReplaced) {
  SecondUser other;
  if (!other.unavailable().empty()) GTEST_SKIP() << other.unavailable();
  DiskCache::Open(TestSettings(root_))->Store(key_, EntryKind::kCubin, "planted");
  other.Own(EntryPath(root_, EntryKind::kCubin, key_));
  auto cache = OpenCache();
  ::testing::internal::CaptureStderr();
  int calls = 0;
  EXPECT_THAT(cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls)),
              ::jitgemm::cache::testing::IsOk());
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("belongs to uid"));
  EXPECT_EQ(calls, 1);
  struct stat st;
  ASSERT_EQ(::stat(EntryPath(root_, EntryKind::kCubin, key_).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

}  // namespace
}  // namespace jitgemm::cache
