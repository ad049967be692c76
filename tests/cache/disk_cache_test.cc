// DiskCache on a real directory: basic behaviour and counters, corrupt
// entries (RELIABILITY 1-4), read-only caches (10), unusable roots (11) and
// failing disks (12).
#include "cache/disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "cache/fault_env.h"
#include "cache/layout.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"
#include "xxhash.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::ChmodTree;
using ::jitgemm::cache::testing::Exists;
using ::jitgemm::cache::testing::FilesUnder;
using ::jitgemm::cache::testing::IsOk;
using ::jitgemm::cache::testing::PayloadFor;
using ::jitgemm::cache::testing::ReadBytes;
using ::jitgemm::cache::testing::ScratchDir;
using ::jitgemm::cache::testing::StatusIs;
using ::jitgemm::cache::testing::TempFilesUnder;
using ::jitgemm::cache::testing::TestSettings;
using ::jitgemm::cache::testing::WriteBytes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

int CountWarnings(const std::string& captured) {
  int n = 0;
  for (size_t at = captured.find("jitgemm cache:"); at != std::string::npos;
       at = captured.find("jitgemm cache:", at + 1)) {
    ++n;
  }
  return n;
}

class DiskCacheTest : public ::testing::Test {
 protected:
  std::shared_ptr<DiskCache> OpenCache(Env* env = Env::Default()) {
    return DiskCache::Open(TestSettings(root_), env);
  }
  std::string PathOf(const CacheKey& key, EntryKind kind = EntryKind::kCubin) {
    return EntryPath(root_, kind, key);
  }
  // A create() that counts its calls and returns the key's payload.
  auto Creator(const CacheKey& key, int* calls) {
    return [key, calls]() -> absl::StatusOr<std::string> {
      ++*calls;
      return PayloadFor(key.text, 5000);
    };
  }

  ScratchDir dir_;
  std::string root_ = dir_.Sub("cache");
  CacheKey key_ = MakeCacheKey("arch=sm_90a\nfamily=sm80\nproblem=M128 N128 K64\n");
  CacheKey key2_ = MakeCacheKey("arch=sm_90a\nfamily=sm80\nproblem=M256 N128 K64\n");
};

TEST_F(DiskCacheTest, OpenCreatesTheLayout) {
  auto cache = OpenCache();
  EXPECT_EQ(cache->mode(), CacheMode::kReadWrite);
  EXPECT_EQ(cache->root(), root_);
  for (const char* d : {"/v1/cubin", "/v1/tuning", "/v1/locks"}) {
    struct stat st;
    ASSERT_EQ(::stat((root_ + d).c_str(), &st), 0) << d;
    EXPECT_TRUE(S_ISDIR(st.st_mode));
  }
}

TEST_F(DiskCacheTest, StoreThenLookupAtTheDocumentedPath) {
  auto cache = OpenCache();
  EXPECT_EQ(cache->Lookup(key_, EntryKind::kCubin), std::nullopt);
  cache->Store(key_, EntryKind::kCubin, "cubin bytes");
  EXPECT_THAT(cache->Lookup(key_, EntryKind::kCubin), Optional(std::string("cubin bytes")));
  // Kinds are separate namespaces.
  EXPECT_EQ(cache->Lookup(key_, EntryKind::kTuningRecord), std::nullopt);
  std::string hex = key_.Hex();
  EXPECT_THAT(FilesUnder(root_), ElementsAre("v1/cubin/" + hex.substr(0, 2) + "/" + hex + ".bin"));
  CacheCounters c = cache->counters();
  EXPECT_EQ(c.hits, 1u);
  EXPECT_EQ(c.misses, 2u);
  EXPECT_EQ(c.stores, 1u);
  EXPECT_EQ(c.corrupt, 0u);
  // Another cache object (another process) sees it.
  EXPECT_THAT(OpenCache()->Lookup(key_, EntryKind::kCubin), Optional(std::string("cubin bytes")));
}

TEST_F(DiskCacheTest, GetOrCreateCreatesOnceThenHits) {
  auto cache = OpenCache();
  int calls = 0;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::string> got = cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls));
    ASSERT_THAT(got, IsOk());
    EXPECT_EQ(*got, PayloadFor(key_.text, 5000));
  }
  EXPECT_EQ(calls, 1);
  CacheCounters c = cache->counters();
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.hits, 2u);
  EXPECT_EQ(c.compiles, 1u);
  EXPECT_EQ(c.stores, 1u);
  EXPECT_THAT(TempFilesUnder(root_), IsEmpty());
  EXPECT_THAT(FilesUnder(root_ + "/v1/locks"), IsEmpty());
}

TEST_F(DiskCacheTest, CreateErrorIsReturnedAndNothingStored) {
  auto cache = OpenCache();
  absl::StatusOr<std::string> got = cache->GetOrCreate(
      key_, EntryKind::kCubin, [] { return absl::InternalError("nvrtc: error: boom"); });
  EXPECT_THAT(got, StatusIs(absl::StatusCode::kInternal, HasSubstr("boom")));
  EXPECT_FALSE(Exists(PathOf(key_)));
  int calls = 0;
  EXPECT_THAT(cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls)), IsOk());
  EXPECT_EQ(calls, 1);
}

// RELIABILITY 1.
TEST_F(DiskCacheTest, TruncatedEntryIsDetectedRecompiledOnceAndReplaced) {
  auto cache = OpenCache();
  int calls = 0;
  ASSERT_THAT(cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls)), IsOk());
  std::string full = ReadBytes(PathOf(key_));
  ASSERT_EQ(::truncate(PathOf(key_).c_str(), static_cast<off_t>(full.size() / 2)), 0);

  auto fresh = OpenCache();
  absl::StatusOr<std::string> got = fresh->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls));
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(*got, PayloadFor(key_.text, 5000));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(fresh->counters().corrupt, 1u);
  EXPECT_EQ(fresh->counters().compiles, 1u);
  EXPECT_EQ(ReadBytes(PathOf(key_)), full);  // replaced by a whole entry
  EXPECT_THAT(fresh->Lookup(key_, EntryKind::kCubin), Optional(PayloadFor(key_.text, 5000)));
}

// RELIABILITY 2.
TEST_F(DiskCacheTest, OverwrittenBytesInPayloadOrHeaderAreDetected) {
  for (size_t offset : {size_t{kEntryHeaderBytes + key_.text.size() + 100}, size_t{8}}) {
    auto cache = OpenCache();
    cache->Store(key_, EntryKind::kCubin, PayloadFor("x", 1000));
    std::string bytes = ReadBytes(PathOf(key_));
    bytes.replace(offset, 3, "\x01\x02\x03");
    WriteBytes(PathOf(key_), bytes);
    EXPECT_EQ(cache->Lookup(key_, EntryKind::kCubin), std::nullopt) << offset;
    EXPECT_EQ(cache->counters().corrupt, 1u);
    EXPECT_FALSE(Exists(PathOf(key_)));  // removed, to be replaced
  }
}

// RELIABILITY 3.
TEST_F(DiskCacheTest, ZeroLengthBadMagicFutureVersionAndHugeClaimsAreMisses) {
  auto cache = OpenCache();
  auto reseal = [](std::string* b) {
    uint64_t sum = XXH3_64bits(b->data(), b->size() - 8);
    for (int i = 0; i < 8; ++i) (*b)[b->size() - 8 + i] = static_cast<char>(sum >> (8 * i));
  };
  const std::string good = EncodeEntry(key_, EntryKind::kCubin, "payload");
  std::string bad_magic = good;
  bad_magic[0] = 'Z';
  std::string future = good;
  future[8] = 9;
  reseal(&future);
  std::string huge = good;
  huge[24 + 5] = 1;  // payload size 2^40
  reseal(&huge);
  int expected_corrupt = 0;
  for (const std::string& bytes : {std::string(), bad_magic, future, huge}) {
    ASSERT_THAT(Env::Default()->CreateDirs(ShardDir(root_, EntryKind::kCubin, key_)), IsOk());
    WriteBytes(PathOf(key_), bytes);
    EXPECT_EQ(cache->Lookup(key_, EntryKind::kCubin), std::nullopt);
    EXPECT_EQ(cache->counters().corrupt, static_cast<uint64_t>(++expected_corrupt));
    EXPECT_FALSE(Exists(PathOf(key_)));
  }
  // A sparse file that claims 1 TiB on disk: refused from its size alone.
  int fd = ::open(PathOf(key_).c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t{1} << 40), 0);
  ::close(fd);
  int calls = 0;
  EXPECT_THAT(cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls)), IsOk());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(cache->counters().corrupt, static_cast<uint64_t>(expected_corrupt + 1));
  EXPECT_EQ(ReadBytes(PathOf(key_)).size(),
            EncodeEntry(key_, EntryKind::kCubin, PayloadFor(key_.text, 5000)).size());
}

TEST_F(DiskCacheTest, DirectoryAtEntryPathIsAMissNotACrash) {
  auto cache = OpenCache();
  ASSERT_THAT(Env::Default()->CreateDirs(PathOf(key_)), IsOk());
  int calls = 0;
  EXPECT_THAT(cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls)), IsOk());
  EXPECT_EQ(calls, 1);
  // Rejected before and again after taking the key's lock: a directory
  // cannot be removed like a bad file.
  EXPECT_EQ(cache->counters().corrupt, 2u);
  EXPECT_EQ(cache->counters().store_failures, 1u);  // rename onto a directory
}

// RELIABILITY 4.
TEST_F(DiskCacheTest, SwappedEntriesAreMissesNotHits) {
  auto cache = OpenCache();
  int calls = 0;
  ASSERT_THAT(cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls)), IsOk());
  ASSERT_THAT(cache->GetOrCreate(key2_, EntryKind::kCubin, Creator(key2_, &calls)), IsOk());
  std::string a = ReadBytes(PathOf(key_));
  std::string b = ReadBytes(PathOf(key2_));
  WriteBytes(PathOf(key_), b);
  WriteBytes(PathOf(key2_), a);

  auto fresh = OpenCache();
  EXPECT_EQ(fresh->Lookup(key_, EntryKind::kCubin), std::nullopt);
  EXPECT_EQ(fresh->Lookup(key2_, EntryKind::kCubin), std::nullopt);
  EXPECT_EQ(fresh->counters().corrupt, 2u);
  EXPECT_EQ(fresh->counters().hits, 0u);
  absl::StatusOr<std::string> got = fresh->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls));
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(*got, PayloadFor(key_.text, 5000));
}

TEST_F(DiskCacheTest, CorruptionIsReportedOnce) {
  auto cache = OpenCache();
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    ASSERT_THAT(Env::Default()->CreateDirs(ShardDir(root_, EntryKind::kCubin, key_)), IsOk());
    WriteBytes(PathOf(key_), "garbage");
    EXPECT_EQ(cache->Lookup(key_, EntryKind::kCubin), std::nullopt);
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(CountWarnings(err), 1) << err;
  EXPECT_THAT(err, HasSubstr(PathOf(key_)));
  EXPECT_EQ(cache->counters().corrupt, 3u);
}

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
  absl::StatusOr<std::string> got = cache->GetOrCreate(key2_, EntryKind::kCubin, Creator(key2_, &calls));
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
  EXPECT_THAT(cache->Prune(0), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("readonly")));
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
  absl::StatusOr<std::string> got = cache->GetOrCreate(key2_, EntryKind::kCubin, Creator(key2_, &calls));
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

TEST_F(UnusableRootTest, GroupWritableIsAccepted) {
  ASSERT_EQ(::mkdir(root_.c_str(), 0775), 0);
  ASSERT_EQ(::chmod(root_.c_str(), 0775), 0);
  ::testing::internal::CaptureStderr();
  auto cache = OpenCache();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(cache->mode(), CacheMode::kReadWrite);
}

// RELIABILITY 12: failing disks never reach the caller.
class FailingDiskTest : public DiskCacheTest {
 protected:
  // Stores through `env` and checks the failure was swallowed and cleaned.
  void ExpectSwallowed(FaultEnv* env, int expected_failures, int expected_stores = 0) {
    ::testing::internal::CaptureStderr();
    auto cache = OpenCache(env);
    int calls = 0;
    absl::StatusOr<std::string> got = cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls));
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

TEST_F(DiskCacheTest, VerifyFindsMisplacedAndCorruptEntries) {
  auto cache = OpenCache();
  cache->Store(key_, EntryKind::kCubin, "a");
  cache->Store(key2_, EntryKind::kCubin, "b");
  CacheKey key3 = MakeCacheKey("third");
  cache->Store(key3, EntryKind::kTuningRecord, "{}");
  WriteBytes(PathOf(key2_), ReadBytes(PathOf(key_)));  // misplaced copy
  std::string p3 = EntryPath(root_, EntryKind::kTuningRecord, key3);
  WriteBytes(p3, "junk");
  absl::StatusOr<VerifyReport> report = cache->Verify(/*remove_corrupt=*/true);
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->entries, 3u);
  EXPECT_EQ(report->valid, 1u);
  EXPECT_THAT(report->corrupt, ::testing::UnorderedElementsAre(PathOf(key2_), p3));
  EXPECT_FALSE(Exists(p3));
  EXPECT_TRUE(Exists(PathOf(key_)));
}

TEST(DiskCacheDefaultTest, DefaultIsCreatedOnceFromTheEnvironment) {
  ScratchDir dir;
  setenv("JITGEMM_CACHE_DIR", dir.Sub("c").c_str(), 1);
  setenv("JITGEMM_CACHE_MAX_BYTES", "1M", 1);
  std::shared_ptr<DiskCache> a = DiskCache::Default();
  std::shared_ptr<DiskCache> b = DiskCache::Default();
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a->root(), dir.Sub("c"));
  EXPECT_EQ(a->settings().max_bytes, 1u << 20);
  EXPECT_EQ(a->mode(), CacheMode::kReadWrite);
  unsetenv("JITGEMM_CACHE_DIR");
  unsetenv("JITGEMM_CACHE_MAX_BYTES");
}

}  // namespace
}  // namespace jitgemm::cache
