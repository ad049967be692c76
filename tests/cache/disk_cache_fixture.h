// The fixture shared by the DiskCache tests on a real scratch directory.
#ifndef JITGEMM_TESTS_CACHE_DISK_CACHE_FIXTURE_H_
#define JITGEMM_TESTS_CACHE_DISK_CACHE_FIXTURE_H_

#include <memory>
#include <string>

#include "cache/disk_cache.h"
#include "cache/layout.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache::testing {

// Lines the cache wrote to stderr (each starts with "jitgemm cache:").
inline int CountWarnings(const std::string& captured) {
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

}  // namespace jitgemm::cache::testing

#endif  // JITGEMM_TESTS_CACHE_DISK_CACHE_FIXTURE_H_
