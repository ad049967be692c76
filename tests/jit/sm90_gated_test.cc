// The sm90 family on gated problems ([gate | up] halves of B): whole halves
// in a tile, no split-K, aligned halves; and which families serve them.

#include <map>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/candidates.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "jit/specializer.h"
#include "support/status_matchers.h"
#include "tests/jit/sm90_config.h"
#include "tests/jit/sm90_problems.h"

namespace jitgemm::jit {
namespace {

using ::jitgemm::support::StatusIs;
using sm90_test::GatedLinear;
using sm90_test::Linear;
using sm90_test::Sm90;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(Sm90FamilyTest, GatedTilesHoldWholeHalvesAndNoSplitK) {
  const GemmProblem p = GatedLinear(2048, 1000, 4096);
  EXPECT_EQ(p.b.ld, 4096);
  const TargetInfo target = OfflineTarget(90);
  EXPECT_TRUE(Sm90().Supports(p, Sm90Config(128, 256, 2, 4, 2), target).ok());
  EXPECT_TRUE(Sm90().Supports(p, Sm90Config(128, 128, 2, 4, 1), target).ok());
  EXPECT_THAT(Sm90().Supports(p, Sm90Config(128, 64, 2, 4, 1), target),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gated")));
  KernelConfig split = Sm90Config(64, 128, 1, 6, 1);
  split.split_k = 2;
  EXPECT_THAT(Sm90().Supports(p, split, target),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("split-K")));
  const std::vector<KernelConfig> configs = Sm90().Candidates(p, target, TuningPolicy::kExhaustive);
  ASSERT_FALSE(configs.empty());
  for (const KernelConfig& c : configs) {
    EXPECT_GE(c.block_n, 128) << c.ToString();
    EXPECT_EQ(c.split_k, 1) << c.ToString();
  }
  // A 128 x 256 tile covers 128 columns of D: 16 x 8 tiles, 64 clusters of two.
  const KernelConfig c = Sm90Config(128, 256, 2, 4, 2);
  EXPECT_EQ(Sm90().Shape(p, c, target).grid[0], 128u);
  const KernelSource s = Specialize(p, c, Sm90(), Sm90().Shape(p, c, target), 16);
  EXPECT_THAT(s.source, HasSubstr("kGate = 1"));
  EXPECT_THAT(s.kernel_name, HasSubstr("_glu"));
  // Ungated specs do not declare the field (their keys stay as they were).
  const GemmProblem plain = Linear(2048, 1000, 4096);
  EXPECT_THAT(Specialize(plain, c, Sm90(), Sm90().Shape(plain, c, target), 16).source,
              Not(HasSubstr("kGate")));
}

// Halves of 80, 96 or 112 columns (one box each of a K-major B) fill the SMs
// where whole 64-column halves leave a wave part empty; an N-major B arrives
// in column blocks of 64, or of 32 for halves of 96, so its halves stay whole
// blocks.
TEST(Sm90FamilyTest, GatedTilesOfAKMajorBTakeHalvesOfAnyWholeBox) {
  const TargetInfo target = OfflineTarget(90);
  // 255 x 5000: 128 x 160 tiles (80 columns of D each) are 2 x 63 = 126 units.
  const GemmProblem p = GatedLinear(255, 5000, 2048);
  for (int bn : {160, 192, 224}) {
    EXPECT_TRUE(Sm90().Supports(p, Sm90Config(128, bn, 2, 4, 1), target).ok()) << bn;
    EXPECT_TRUE(Sm90().Supports(p, Sm90Config(128, bn, 2, 4, 2), target).ok()) << bn;
  }
  EXPECT_EQ(Sm90().Shape(p, Sm90Config(128, 160, 2, 4, 1), target).grid[0], 126u);
  bool odd_width = false;
  for (const KernelConfig& c : Sm90().Candidates(p, target, TuningPolicy::kFast)) {
    odd_width = odd_width || c.block_n % 128 != 0;
  }
  EXPECT_TRUE(odd_width);
  // Into fp32 D, 224 columns with a bias spilled.
  GemmProblem f32 = p;
  f32.d.type = f32.c.type = DataType::kF32;
  f32.epilogue.bias = BiasMode::kPerColumn;
  f32 = Canonicalize(f32);
  EXPECT_TRUE(Sm90().Supports(f32, Sm90Config(128, 192, 2, 4, 1), target).ok());
  EXPECT_THAT(Sm90().Supports(f32, Sm90Config(128, 224, 2, 4, 1), target),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fp32 D")));
  GemmProblem n_major = p;
  n_major.b.layout = Layout::kRowMajor;
  n_major.b.ld = 2 * n_major.n;
  n_major = Canonicalize(n_major);
  ASSERT_TRUE(ValidateProblem(n_major).ok()) << ValidateProblem(n_major);
  EXPECT_TRUE(Sm90().Supports(n_major, Sm90Config(128, 192, 2, 4, 1), target).ok());
  EXPECT_TRUE(Sm90().Supports(n_major, Sm90Config(128, 192, 2, 4, 2), target).ok());
  EXPECT_THAT(Sm90().Supports(n_major, Sm90Config(128, 224, 2, 4, 1), target),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("32-column")));
  EXPECT_THAT(Sm90().Supports(n_major, Sm90Config(128, 160, 2, 4, 1), target),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("32-column")));
  bool halves_of_96 = false;
  for (const KernelConfig& c : Sm90().Candidates(n_major, target, TuningPolicy::kExhaustive)) {
    EXPECT_EQ(c.block_n % 64, 0) << c.ToString();
    halves_of_96 = halves_of_96 || c.block_n == 192;
  }
  EXPECT_TRUE(halves_of_96);
}

TEST(Sm90FamilyTest, RowMajorGatedBNeedsTheUpHalfSixteenByteAligned) {
  GemmProblem p = MakeGemm(256, 523, 512, DataType::kF16);
  p.epilogue.gate = Gate::kHalves;
  p.b.ld = 1048;
  p = Canonicalize(p);
  EXPECT_THAT(Sm90().Supports(p, Sm90Config(128, 128, 2, 4, 1), OfflineTarget(90)),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("column N = 523")));
  p.b.layout = Layout::kColMajor;  // K-major: the halves are rows of the box, any N
  p.b.ld = 512;
  EXPECT_TRUE(Sm90().Supports(p, Sm90Config(128, 128, 2, 4, 1), OfflineTarget(90)).ok());
}

// The tensor-core families serve gated problems (small_m at M <= 64, with
// no K clusters); simt refuses them.
TEST(Sm90FamilyTest, GatedProblemsGetTensorCoreConfigsOnly) {
  const GemmProblem p = GatedLinear(16, 4096, 4096);
  Options options;
  options.tuning = TuningPolicy::kExhaustive;
  options.pointer_alignment = 16;
  for (int sm : {90, 80}) {
    std::map<Family, int> seen;
    for (const KernelConfig& c : ProposeConfigs(p, OfflineTarget(sm), options)) {
      ++seen[c.family];
      if (c.family == Family::kSmallM) {
        EXPECT_FALSE(c.cluster_k) << c.ToString();
      }
    }
    EXPECT_EQ(seen[Family::kSm90] > 0, sm == 90);
    EXPECT_GT(seen[Family::kSm80], 0);
    EXPECT_GT(seen[Family::kSmallM], 0);
    EXPECT_EQ(seen.count(Family::kSimt), 0u);
  }
}

}  // namespace
}  // namespace jitgemm::jit
