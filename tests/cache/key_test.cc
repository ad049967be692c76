// RELIABILITY 14 for CacheKey: the key is a pure function of the canonical
// text. Every byte of the text matters, nothing outside it does, and the hash
// is the published XXH3-128, so a key made offline equals one made at run time.
#include "cache/key.h"

#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jitgemm::cache {
namespace {

using ::testing::MatchesRegex;

// Shaped like the jit layer's canonical text, one field per line.
const char kCanonical[] =
    "abi=1\n"
    "nvrtc=13000\n"
    "arch=sm_90a\n"
    "family=sm80\n"
    "config=128x128x32 w2x2 s3 splitk1 pdl0 runtime_m0\n"
    "problem=bf16 bf16 bf16 f32 M4096 N4096 K4096 lda4096 ldb4096 ldc4096 tn batch1\n"
    "epilogue=bias_relu\n"
    "sources=9f86d081884c7d65\n"
    "flags=-std=c++17 --use_fast_math=0 -lineinfo\n"
    "library=0.1.0\n";

TEST(CacheKeyTest, MatchesPublishedXxh3Vector) {
  // xxhsum -H2 of empty input; pins the algorithm (XXH3-128, seed 0).
  CacheKey key = MakeCacheKey("");
  EXPECT_EQ(key.hi, 0x99aa06d3014798d8ULL);
  EXPECT_EQ(key.lo, 0x6001c324468d497fULL);
  EXPECT_EQ(key.Hex(), "99aa06d3014798d86001c324468d497f");
}

TEST(CacheKeyTest, HexIs32LowercaseHexHighHalfFirst) {
  CacheKey key = MakeCacheKey(kCanonical);
  EXPECT_THAT(key.Hex(), MatchesRegex("[0-9a-f]{32}"));
  char hi[17];
  std::snprintf(hi, sizeof(hi), "%016llx", static_cast<unsigned long long>(key.hi));
  EXPECT_EQ(key.Hex().substr(0, 16), hi);
  CacheKey small;
  small.hi = 1;
  small.lo = 2;
  EXPECT_EQ(small.Hex(), "00000000000000010000000000000002");
}

TEST(CacheKeyTest, KeepsTheText) { EXPECT_EQ(MakeCacheKey(kCanonical).text, kCanonical); }

TEST(CacheKeyTest, SameTextSameKeyAcrossThreadsAndEnvironment) {
  const CacheKey first = MakeCacheKey(kCanonical);
  // Nothing ambient may enter the key: not the thread, the working
  // directory, the hostname or variables, not the time.
  setenv("HOSTNAME", "another-host", 1);
  setenv("JITGEMM_CACHE_DIR", "/somewhere/else", 1);
  ASSERT_EQ(chdir("/"), 0);
  std::vector<CacheKey> keys(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&keys, i] { keys[i] = MakeCacheKey(kCanonical); });
  }
  for (auto& t : threads) t.join();
  for (const CacheKey& k : keys) EXPECT_EQ(k, first);
  unsetenv("JITGEMM_CACHE_DIR");
}

TEST(CacheKeyTest, EveryByteChangeChangesTheKey) {
  const std::string text = kCanonical;
  // Every distinct text made by flipping, deleting or appending one byte.
  std::set<std::string> texts = {text, text + " ", text + std::string(1, '\0')};
  for (size_t i = 0; i < text.size(); ++i) {
    for (unsigned char flip : {0x01, 0x20, 0x80}) {
      std::string changed = text;
      changed[i] = static_cast<char>(changed[i] ^ flip);
      texts.insert(changed);
    }
    texts.insert(std::string(text).erase(i, 1));
  }
  ASSERT_GT(texts.size(), 4 * text.size() / 2);
  std::set<std::string> keys;
  for (const std::string& t : texts) keys.insert(MakeCacheKey(t).Hex());
  EXPECT_EQ(keys.size(), texts.size());
}

struct FieldChange {
  const char* what;
  const char* from;
  const char* to;
};

class CacheKeyFieldTest : public ::testing::TestWithParam<FieldChange> {};

TEST_P(CacheKeyFieldTest, ChangingTheFieldChangesTheKey) {
  const FieldChange& c = GetParam();
  std::string text = kCanonical;
  size_t at = text.find(c.from);
  ASSERT_NE(at, std::string::npos) << c.from;
  std::string changed = text;
  changed.replace(at, std::string(c.from).size(), c.to);
  EXPECT_NE(MakeCacheKey(text).Hex(), MakeCacheKey(changed).Hex()) << c.what;
  EXPECT_EQ(MakeCacheKey(changed).Hex(), MakeCacheKey(changed).Hex()) << c.what;
}

INSTANTIATE_TEST_SUITE_P(
    Fields, CacheKeyFieldTest,
    ::testing::Values(FieldChange{"arch suffix", "arch=sm_90a", "arch=sm_90"},
                      FieldChange{"arch", "arch=sm_90a", "arch=sm_80"},
                      FieldChange{"nvrtc version", "nvrtc=13000", "nvrtc=12080"},
                      FieldChange{"abi", "abi=1", "abi=2"}, FieldChange{"flags", "-lineinfo", "-G"},
                      FieldChange{"source hash", "9f86d081884c7d65", "9f86d081884c7d64"},
                      FieldChange{"library version", "library=0.1.0", "library=0.1.1"},
                      FieldChange{"family", "family=sm80", "family=simt"},
                      FieldChange{"tile", "128x128x32", "128x64x32"},
                      FieldChange{"stages", " s3 ", " s4 "}, FieldChange{"M", "M4096", "M4095"},
                      FieldChange{"N", "N4096", "N4097"}, FieldChange{"K", "K4096", "K64"},
                      FieldChange{"lda", "lda4096", "lda4104"},
                      FieldChange{"layout", " tn ", " nn "},
                      FieldChange{"dtype", "bf16 bf16 bf16", "f16 f16 f16"},
                      FieldChange{"batch", "batch1", "batch2"},
                      FieldChange{"epilogue", "bias_relu", "bias_gelu"}),
    [](const ::testing::TestParamInfo<FieldChange>& info) {
      std::string name;
      for (const char* p = info.param.what; *p; ++p) name += std::isalnum(*p) ? *p : '_';
      return name;
    });

}  // namespace
}  // namespace jitgemm::cache
