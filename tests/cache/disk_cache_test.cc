// DiskCache on a real directory: basic behaviour and exact counters, and
// corrupt entries (RELIABILITY 1-4): always a miss, recompiled once, replaced.
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
#include "tests/cache/disk_cache_fixture.h"
#include "tests/cache/test_util.h"
#include "xxhash.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::CountWarnings;
using ::jitgemm::cache::testing::DiskCacheTest;
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
    absl::StatusOr<std::string> got =
        cache->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls));
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
  absl::StatusOr<std::string> got =
      fresh->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls));
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
  absl::StatusOr<std::string> got =
      fresh->GetOrCreate(key_, EntryKind::kCubin, Creator(key_, &calls));
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
