// The sm80 family's cost model: which tiles it ranks first where a block's
// epilogue outweighs its k loop (short K, C read, an activation), where the
// k loop dominates, where rows past M are never read out, and where rows on
// 2 bytes make every k tile wait.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/problem_signature.h"
#include "gtest/gtest.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit {
namespace {

const KernelFamily& Sm80() { return GetFamily(Family::kSm80); }

GemmProblem KMajor(int64_t m, int64_t n, int64_t k, DataType t) {
  GemmProblem p = MakeGemm(m, n, k, t);
  p.b.layout = Layout::kColMajor;
  return p;
}

int Area(const KernelConfig& c) { return c.block_m * c.block_n; }

KernelConfig First(const GemmProblem& p) {
  const std::vector<KernelConfig> list =
      Sm80().Candidates(Canonicalize(p), OfflineTarget(90), TuningPolicy::kHeuristic);
  EXPECT_EQ(list.size(), 1u);
  return list.empty() ? KernelConfig{} : list[0];
}

// Three of the short-K problems of docs/tuning.md's fit, whose fastest sm80
// tiles are 64 x 64 or smaller.
TEST(Sm80CostTest, ShortKLoopsWithAnEpilogueGetSmallTiles) {
  GemmProblem with_c = KMajor(2047, 513, 48, DataType::kF16);
  with_c.epilogue.beta = 1.0f;
  EXPECT_LE(Area(First(with_c)), 64 * 64) << First(with_c).ToString();

  GemmProblem batched = KMajor(777, 255, 40, DataType::kBF16);
  batched.batch_count = 8;
  batched.a.batch_stride = 777 * 40;
  batched.b.batch_stride = 0;
  batched.d.batch_stride = batched.c.batch_stride = 777 * 255;
  batched.epilogue.bias = BiasMode::kPerColumn;
  batched.epilogue.activation = Activation::kSilu;
  EXPECT_LE(Area(First(batched)), 64 * 64) << First(batched).ToString();

  GemmProblem f32_d = KMajor(3000, 300, 80, DataType::kF16);
  f32_d.d.type = f32_d.c.type = DataType::kF32;
  f32_d.epilogue.activation = Activation::kSilu;
  EXPECT_LE(Area(First(f32_d)), 64 * 64) << First(f32_d).ToString();
}

// Long k loops: the first pick is unchanged by the epilogue term, and on the
// H100 the fastest tiles of these problems are 128 x 128 or larger.
TEST(Sm80CostTest, LongKLoopsKeepLargeTiles) {
  for (const GemmProblem& p :
       {KMajor(4096, 4096, 1023, DataType::kBF16), KMajor(2048, 2048, 2047, DataType::kF16),
        KMajor(8192, 512, 777, DataType::kF16)}) {
    EXPECT_GE(Area(First(p)), 128 * 128) << DebugString(p) << ": " << First(p).ToString();
  }
}

// M = 8: a 64-row tile reads out 8 rows, so its epilogue costs no more than
// a 32-row tile's (on the H100 the 64 x 128 tile was the faster of the two).
TEST(Sm80CostTest, RowsPastMCostNoEpilogue) {
  GemmProblem p = MakeGemm(8, 14336, 128, DataType::kF16);
  p.a.layout = Layout::kColMajor;
  p.epilogue.bias = BiasMode::kPerRow;
  const std::vector<KernelConfig> list =
      Sm80().Candidates(Canonicalize(p), OfflineTarget(90), TuningPolicy::kFast);
  auto index = [&](int bm, int bn, int wm, int wn) {
    for (size_t i = 0; i < list.size(); ++i) {
      const KernelConfig& c = list[i];
      if (c.block_m == bm && c.block_n == bn && c.warps_m == wm && c.warps_n == wn &&
          c.block_k == 64 && c.split_k == 1) {
        return static_cast<int>(i);
      }
    }
    return static_cast<int>(list.size());
  };
  EXPECT_LT(index(64, 128, 1, 4), index(32, 32, 2, 2));
  EXPECT_LT(index(64, 128, 1, 4), 2) << "the second of the two sm80 picks beside sm90";
}

// Rows on 2 bytes (A column-major with an odd lda, B row-major with an odd
// ldb), few tiles and a long K: the first guess splits K, as the fastest
// configs timed on the H200 did (200 x 300 x 2048: 37.4 us unsplit, 17.2 in
// three splits). The same shapes with 16-byte rows keep the plain model's pick.
TEST(Sm80CostTest, RowsOnTwoBytesSplitALongKFirst) {
  auto odd = [](int64_t m, int64_t n, int64_t k) {
    GemmProblem p = MakeGemm(m, n, k, DataType::kBF16);
    p.a.layout = Layout::kColMajor;
    p.a.ld = m % 2 == 1 ? m : m + 1;
    p.b.ld = n % 2 == 1 ? n : n + 1;
    return p;
  };
  for (const GemmProblem& p : {odd(200, 300, 2048), odd(64, 512, 4096), odd(33, 255, 1024),
                               odd(96, 200, 1024), odd(2047, 24, 2048)}) {
    EXPECT_GT(First(p).split_k, 1) << DebugString(p) << ": " << First(p).ToString();
  }
  GemmProblem aligned = MakeGemm(200, 304, 2048, DataType::kBF16);
  aligned.a.layout = Layout::kColMajor;
  aligned.a.ld = 208;
  EXPECT_EQ(First(aligned).split_k, 1) << First(aligned).ToString();
}

// The charge only picks the first guess: the timed list holds the plain
// model's other configs, so a narrow problem's fast list is the plain
// ranking's with the charged pick moved (or added) to the front.
TEST(Sm80CostTest, RowsOnTwoBytesChangeOnlyTheFirstOfTheTimedList) {
  GemmProblem p = MakeGemm(200, 301, 2048, DataType::kBF16);
  p.a.layout = Layout::kColMajor;
  p.a.ld = 201;
  p.b.ld = 301;
  const std::vector<KernelConfig> fast =
      Sm80().Candidates(Canonicalize(p), OfflineTarget(90), TuningPolicy::kFast);
  ASSERT_EQ(fast.size(), 8u);
  EXPECT_EQ(fast[0], First(p));
  GemmProblem wide = p;  // 16-byte rows, the same shape otherwise
  wide.a.ld = 208;
  wide.b.ld = 304;
  const std::vector<KernelConfig> plain =
      Sm80().Candidates(Canonicalize(wide), OfflineTarget(90), TuningPolicy::kFast);
  ASSERT_EQ(plain.size(), 8u);
  int shared = 0;
  for (size_t i = 1; i < fast.size(); ++i) {
    shared += std::find(plain.begin(), plain.end(), fast[i]) != plain.end();
  }
  EXPECT_EQ(shared, 7) << "the rest of the list is the plain model's";
}

// Exhaustive tuning times every config fast tuning would: the grid alone
// split K at most 4 ways, and on rows on 2 bytes the fast list's 16-way split
// ran 14.9 us against the grid's best 35.5 (f16 128 x 128 x 8192, H200).
TEST(Sm80CostTest, ExhaustiveListHoldsTheFastList) {
  GemmProblem odd = MakeGemm(128, 128, 8192, DataType::kF16);
  odd.a.layout = Layout::kColMajor;
  odd.a.ld = 129;
  odd.b.ld = 129;
  for (const GemmProblem& p :
       {odd, KMajor(4096, 4096, 1023, DataType::kBF16), KMajor(33, 255, 1024, DataType::kF16)}) {
    const GemmProblem c = Canonicalize(p);
    const std::vector<KernelConfig> all =
        Sm80().Candidates(c, OfflineTarget(90), TuningPolicy::kExhaustive);
    for (const KernelConfig& f : Sm80().Candidates(c, OfflineTarget(90), TuningPolicy::kFast)) {
      EXPECT_NE(std::find(all.begin(), all.end(), f), all.end())
          << DebugString(p) << ": " << f.ToString();
    }
  }
}

}  // namespace
}  // namespace jitgemm::jit
