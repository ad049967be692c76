// RELIABILITY 13: eviction to a size cap, least recently used first, with
// exact arithmetic; an entry evicted under a reader is a miss, not an error.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cache/disk_cache.h"
#include "cache/layout.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::Exists;
using ::jitgemm::cache::testing::IsOk;
using ::jitgemm::cache::testing::PayloadFor;
using ::jitgemm::cache::testing::ScratchDir;
using ::jitgemm::cache::testing::SetMtime;
using ::jitgemm::cache::testing::StatusIs;
using ::jitgemm::cache::testing::TestSettings;
using ::jitgemm::cache::testing::WriteBytes;
using ::testing::HasSubstr;
using ::testing::Optional;

class EvictionTest : public ::testing::Test {
 protected:
  // Ten entries of different sizes, entry i last used at t0 + i minutes.
  void Fill(DiskCache& cache) {
    for (int i = 0; i < 10; ++i) {
      keys_.push_back(MakeCacheKey(absl::StrCat("entry ", i)));
      std::string payload = PayloadFor(keys_[i].text, 1000 * (i + 1));
      cache.Store(keys_[i], i % 3 == 0 ? EntryKind::kTuningRecord : EntryKind::kCubin, payload);
      sizes_.push_back(EncodeEntry(keys_[i], EntryKind::kCubin, payload).size());
      SetMtime(Path(i), t0_ + absl::Minutes(i));
    }
  }
  EntryKind KindOf(int i) { return i % 3 == 0 ? EntryKind::kTuningRecord : EntryKind::kCubin; }
  std::string Path(int i) { return EntryPath(root_, KindOf(i), keys_[i]); }
  uint64_t SizeOf(std::initializer_list<int> ids) {
    uint64_t sum = 0;
    for (int i : ids) sum += sizes_[i];
    return sum;
  }

  ScratchDir dir_;
  std::string root_ = dir_.Sub("cache");
  absl::Time t0_ = absl::Now() - absl::Hours(10);
  std::vector<CacheKey> keys_;
  std::vector<uint64_t> sizes_;
};

TEST_F(EvictionTest, UsageCountsEntryFilesExactly) {
  auto cache = DiskCache::Open(TestSettings(root_));
  Fill(*cache);
  // Temp and lock files are not entries.
  WriteBytes(TempPath(root_, EntryKind::kCubin, keys_[1], 1, 2), "partial");
  WriteBytes(LockPath(root_, EntryKind::kCubin, keys_[1]), "");
  absl::StatusOr<CacheUsage> usage = cache->Usage();
  ASSERT_THAT(usage, IsOk());
  EXPECT_EQ(usage->entries, 10u);
  EXPECT_EQ(usage->bytes, SizeOf({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST_F(EvictionTest, PrunesOldestFirstToExactlyTheCap) {
  auto cache = DiskCache::Open(TestSettings(root_));
  Fill(*cache);
  // Room for the four newest (6..9) and not one byte for entry 5.
  const uint64_t cap = SizeOf({6, 7, 8, 9}) + sizes_[5] - 1;
  ASSERT_THAT(cache->Prune(cap), IsOk());
  EXPECT_EQ(cache->counters().evictions, 6u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Exists(Path(i)), i >= 6) << i;
  absl::StatusOr<CacheUsage> usage = cache->Usage();
  ASSERT_THAT(usage, IsOk());
  EXPECT_EQ(usage->entries, 4u);
  EXPECT_EQ(usage->bytes, SizeOf({6, 7, 8, 9}));
  // Already under the cap: nothing more goes.
  ASSERT_THAT(cache->Prune(cap), IsOk());
  EXPECT_EQ(cache->counters().evictions, 6u);
  ASSERT_THAT(cache->Prune(SizeOf({6, 7, 8, 9})), IsOk());
  EXPECT_EQ(cache->counters().evictions, 6u);
  ASSERT_THAT(cache->Prune(0), IsOk());
  EXPECT_EQ(cache->counters().evictions, 10u);
  EXPECT_EQ(cache->Usage()->bytes, 0u);
}

TEST_F(EvictionTest, AHitMakesAnEntryRecentlyUsed) {
  auto cache = DiskCache::Open(TestSettings(root_));
  Fill(*cache);
  EXPECT_TRUE(cache->Lookup(keys_[0], KindOf(0)).has_value());  // oldest, now newest
  ASSERT_THAT(cache->Prune(SizeOf({0, 9})), IsOk());
  EXPECT_TRUE(Exists(Path(0)));
  EXPECT_TRUE(Exists(Path(9)));
  EXPECT_EQ(cache->counters().evictions, 8u);
}

TEST_F(EvictionTest, EvictedEntryIsAMissThenRecreated) {
  auto cache = DiskCache::Open(TestSettings(root_));
  Fill(*cache);
  ASSERT_THAT(cache->Prune(0), IsOk());
  EXPECT_EQ(cache->Lookup(keys_[3], KindOf(3)), std::nullopt);
  CacheCounters c = cache->counters();
  EXPECT_EQ(c.corrupt, 0u);
  EXPECT_EQ(c.misses, 1u);
  int calls = 0;
  absl::StatusOr<std::string> got = cache->GetOrCreate(keys_[3], KindOf(3), [&] {
    ++calls;
    return absl::StatusOr<std::string>("again");
  });
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(*got, "again");
  EXPECT_EQ(calls, 1);
}

TEST_F(EvictionTest, ReadersRacingEvictionSeeOnlyMissesOrCorrectBytes) {
  auto cache = DiskCache::Open(TestSettings(root_));
  Fill(*cache);
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0}, lookups{0};
  std::thread pruner([&] {
    while (!stop) {
      // Another cache object, like `jitgemm-cache prune` in another process.
      auto other = DiskCache::Open(TestSettings(root_));
      other->Prune(0).IgnoreError();
    }
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      for (int n = 0; n < 300; ++n) {
        int i = (t + n) % 10;
        std::string payload = PayloadFor(keys_[i].text, 1000 * (i + 1));
        std::optional<std::string> hit = cache->Lookup(keys_[i], KindOf(i));
        if (hit && *hit != payload) ++wrong;
        absl::StatusOr<std::string> got = cache->GetOrCreate(
            keys_[i], KindOf(i), [&] { return absl::StatusOr<std::string>(payload); });
        if (!got.ok() || *got != payload) ++wrong;
        ++lookups;
      }
    });
  }
  for (auto& r : readers) r.join();
  stop = true;
  pruner.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(lookups.load(), 1200);
  EXPECT_EQ(cache->counters().corrupt, 0u);
}

TEST_F(EvictionTest, StoringPastTheCapEvictsDownToNinetyPercent) {
  CacheSettings s = TestSettings(root_);
  // Equal-sized entries: same key text length and payload length.
  auto key = [](int i) { return MakeCacheKey(absl::StrCat("auto ", 10 + i)); };
  const uint64_t size = EncodeEntry(key(0), EntryKind::kCubin, std::string(1000, 'x')).size();
  s.max_bytes = 10 * size;
  auto cache = DiskCache::Open(s);
  for (int i = 0; i < 10; ++i) cache->Store(key(i), EntryKind::kCubin, std::string(1000, 'x'));
  EXPECT_EQ(cache->counters().evictions, 0u);
  EXPECT_EQ(cache->Usage()->bytes, 10 * size);
  cache->Store(key(10), EntryKind::kCubin, std::string(1000, 'x'));
  // 11 entries > cap: pruned to at most 9 entries' worth (90% of the cap).
  EXPECT_EQ(cache->counters().evictions, 2u);
  EXPECT_EQ(cache->Usage()->entries, 9u);
  EXPECT_EQ(cache->Usage()->bytes, 9 * size);
}

TEST_F(EvictionTest, PruneOfAReadOnlyCacheIsRefused) {
  CacheSettings s = TestSettings(root_);
  DiskCache::Open(s);
  s.mode = CacheMode::kReadOnly;
  EXPECT_THAT(DiskCache::Open(s)->Prune(0),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("readonly")));
}

}  // namespace
}  // namespace jitgemm::cache
