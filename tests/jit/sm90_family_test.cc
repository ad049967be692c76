// The sm90 (TMA + wgmma) family's host rules: which problems it serves,
// which tiles it proposes, how it launches and names its kernels.

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/candidates.h"
#include "jit/families/sm90.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "jit/specializer.h"
#include "support/status_matchers.h"
#include "tests/jit/sm90_config.h"
#include "tests/jit/sm90_problems.h"

namespace jitgemm::jit {
namespace {

using ::jitgemm::support::IsOk;
using ::jitgemm::support::StatusIs;
using sm90_test::BatchedLinear;
using sm90_test::GatedLinear;
using sm90_test::Linear;
using sm90_test::Sm90;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(Sm90FamilyTest, ServesAlignedHalfProblemsOnSm90Only) {
  const GemmProblem p = Linear(4096, 4096, 4096);
  const KernelConfig c = Sm90Config(128, 256, 2, 4, 2);
  EXPECT_TRUE(Sm90().Supports(p, c, OfflineTarget(90)).ok());
  EXPECT_THAT(Sm90().Supports(p, c, OfflineTarget(80)),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("sm_90a")));
  EXPECT_THAT(Sm90().Supports(Linear(512, 512, 512, DataType::kF32), c, OfflineTarget(90)),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("fp16 or bf16")));
}

TEST(Sm90FamilyTest, RefusesRowsTmaCannotAddress) {
  GemmProblem p = MakeGemm(300, 300, 300, DataType::kF16);
  p.a.ld = 301;  // 602-byte rows
  p = Canonicalize(p);
  EXPECT_THAT(Sm90().Supports(p, Sm90Config(128, 128, 2, 4, 1), OfflineTarget(90)),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("16 bytes")));
  // Nor does the candidate set offer the family for it.
  for (const KernelConfig& c : ProposeConfigs(p, OfflineTarget(90), Options())) {
    EXPECT_NE(c.family, Family::kSm90) << c.ToString();
  }
}

TEST(Sm90FamilyTest, NotProposedWithoutSixteenBytePointers) {
  Options options;
  options.pointer_alignment = 8;
  for (const KernelConfig& c :
       ProposeConfigs(Linear(2048, 2048, 2048), OfflineTarget(90), options)) {
    EXPECT_NE(c.family, Family::kSm90) << c.ToString();
  }
}

// Widths of 160 and 224 fill a last wave that those of 64 leave part empty:
// 384 x 4608 x 3072 x 4 makes 1.64 waves of 128 x 256 tiles, 1.91 of 128 x 224.
TEST(Sm90FamilyTest, ProposesOneWidthOffTheStepsOf64WhereItFillsTheWaves) {
  const TargetInfo t = OfflineTarget(90);
  const GemmProblem p = BatchedLinear(384, 4608, 3072, 4);
  const std::vector<KernelConfig> fast = Sm90().Candidates(p, t, TuningPolicy::kFast);
  int odd = 0;
  for (const KernelConfig& c : fast) odd += c.block_n % 64 != 0 ? 1 : 0;
  EXPECT_EQ(odd, 1);
  EXPECT_EQ(fast[0].block_n, 224) << fast[0].ToString();
  // 16-bit D in 224 columns: 3.5 staging blocks, the last overlapping.
  const KernelConfig c224 = Sm90Config(128, 224, 2, 4, 2);
  EXPECT_THAT(Sm90().Supports(p, c224, t), IsOk());
  EXPECT_TRUE(Sm90TmaStore(p, c224));
  const KernelSource src = Specialize(p, c224, Sm90(), Sm90().Shape(p, c224, t), 16);
  EXPECT_THAT(src.source, HasSubstr("kTmaStore = true"));
  EXPECT_THAT(src.kernel_name, HasSubstr("_128x224x64_"));
  // The heuristic policy keeps to the widths of 64.
  for (const KernelConfig& c : Sm90().Candidates(p, t, TuningPolicy::kHeuristic)) {
    EXPECT_EQ(c.block_n % 64, 0) << c.ToString();
  }
  // N-major B arrives in 32-column boxes there (64-byte swizzled); of a
  // pair's seven, the first CTA loads four.
  GemmProblem n_major = p;
  n_major.b.layout = Layout::kRowMajor;
  n_major.b.ld = 0;
  n_major = Canonicalize(n_major);
  EXPECT_THAT(Sm90().Supports(n_major, c224, t), IsOk());
  EXPECT_THAT(Sm90().Supports(n_major, Sm90Config(128, 224, 2, 4, 1), t), IsOk());
  EXPECT_EQ(Sm90NMajorBBoxRowBytes(n_major, Sm90Config(128, 224, 2, 4, 1)), 64);
  EXPECT_EQ(Sm90NMajorBBoxRowBytes(n_major, Sm90Config(128, 256, 2, 4, 1)), 128);
  odd = 0;
  int odd_pairs = 0;
  for (const KernelConfig& c : Sm90().Candidates(n_major, t, TuningPolicy::kExhaustive)) {
    odd += c.block_n % 64 != 0 ? 1 : 0;
    odd_pairs += c.block_n % 64 != 0 && c.cluster_m == 2 ? 1 : 0;
  }
  EXPECT_GT(odd, 0);
  EXPECT_GT(odd_pairs, 0);
  // A gated tile's halves are one box each of a K-major B (sm90_gated_test.cc).
  GemmProblem gated = Linear(384, 2304, 3072);
  gated.epilogue.gate = Gate::kHalves;
  gated = Canonicalize(gated);
  EXPECT_THAT(Sm90().Supports(gated, Sm90Config(128, 224, 2, 4, 1), t), IsOk());
}

TEST(Sm90FamilyTest, RefusesInvalidTiles) {
  const GemmProblem p = Linear(1024, 1024, 1024);
  const TargetInfo t = OfflineTarget(90);
  EXPECT_THAT(Sm90().Supports(p, Sm90Config(256, 256, 2, 2, 1), t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("accumulators")));
  EXPECT_THAT(Sm90().Supports(p, Sm90Config(128, 80, 2, 4, 1), t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("block_n")));
  EXPECT_THAT(Sm90().Supports(p, Sm90Config(128, 256, 2, 6, 1), t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shared memory")));
  EXPECT_THAT(Sm90().Supports(p, Sm90Config(128, 128, 2, 4, 4), t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1 or 2 CTAs")));
  KernelConfig runtime_m = Sm90Config(128, 128, 2, 4, 1);
  runtime_m.runtime_m = true;
  EXPECT_THAT(Sm90().Supports(p, runtime_m, t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exact M")));
  // N-major B splits over the cluster in 64-column blocks: one is not a
  // pair's; three are (two and one).
  GemmProblem nn = MakeGemm(1024, 1024, 1024, DataType::kBF16);
  EXPECT_THAT(
      Sm90().Supports(Canonicalize(nn), Sm90Config(128, 64, 2, 6, 2), t),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a column block for each CTA")));
  EXPECT_THAT(Sm90().Supports(Canonicalize(nn), Sm90Config(128, 192, 2, 4, 2), t), IsOk());
}

TEST(Sm90FamilyTest, LargeProblemsGetWideTilesInClustersFirst) {
  const auto configs =
      Sm90().Candidates(Linear(8192, 8192, 8192), OfflineTarget(90), TuningPolicy::kFast);
  ASSERT_FALSE(configs.empty());
  EXPECT_LE(configs.size(), 4u);
  EXPECT_EQ(configs.front().block_m * configs.front().block_n, 128 * 256);
  EXPECT_EQ(configs.front().cluster_m, 2);
  // Every proposal uses the deepest ring that fits.
  for (const KernelConfig& c : configs) {
    KernelConfig deeper = c;
    ++deeper.stages;
    EXPECT_FALSE(Sm90().Supports(Linear(8192, 8192, 8192), deeper, OfflineTarget(90)).ok())
        << c.ToString();
  }
}

// A pair splitting an N-major B's three, five or seven column blocks
// unevenly is timed only where the model puts it first (its fuller last
// wave), never as a filler behind the widths of 64.
TEST(Sm90FamilyTest, FastListKeepsAnUnevenNMajorPairOnlyFirst) {
  const TargetInfo t = OfflineTarget(90);
  auto fast = [&](int64_t m, int64_t n, int64_t k) {
    return Sm90().Candidates(Canonicalize(MakeGemm(m, n, k, DataType::kBF16)), t,
                             TuningPolicy::kFast);
  };
  // 2048 x 2560 x 4096: 128 x 160 pairs fill two waves (16 column tiles).
  auto configs = fast(2048, 2560, 4096);
  ASSERT_FALSE(configs.empty());
  EXPECT_EQ(configs.front().block_n, 160);
  EXPECT_EQ(configs.front().cluster_m, 2);
  // 8192^3: 128 x 224 and 128 x 192 pairs come after the widths of 64.
  configs = fast(8192, 8192, 8192);
  ASSERT_FALSE(configs.empty());
  for (const KernelConfig& c : configs) {
    EXPECT_FALSE(c.cluster_m == 2 && (c.block_n == 192 || c.block_n == 224)) << c.ToString();
  }
  // The wide ping-pong tile timed first is the one that loads its B alone.
  configs = fast(4096, 3584, 2048);
  ASSERT_FALSE(configs.empty());
  EXPECT_TRUE(configs.front().ping_pong);
  EXPECT_EQ(configs.front().block_n, 192);
  EXPECT_EQ(configs.front().cluster_m, 1);
}

// Small-M problems (memory-bound) leave 32 KB of the SM's shared memory for
// the next kernel's CTAs under programmatic dependent launch; large ones keep
// the deepest ring.
TEST(Sm90FamilyTest, SmallMProblemsLeaveSharedMemoryForTheNextKernel) {
  const TargetInfo target = OfflineTarget(90);
  const int limit = target.shared_bytes_per_block_optin - 32 * 1024;
  for (const GemmProblem& p :
       {Linear(16, 14336, 4096), GatedLinear(16, 14336, 4096), Linear(64, 4096, 4096)}) {
    const auto configs = Sm90().Candidates(p, target, TuningPolicy::kExhaustive);
    ASSERT_FALSE(configs.empty());
    bool reduced = false;
    for (const KernelConfig& c : configs) {
      EXPECT_LE(Sm90().Shape(p, c, target).shared_bytes, static_cast<uint32_t>(limit))
          << c.ToString();
      KernelConfig deeper = c;
      ++deeper.stages;
      reduced = reduced || Sm90().Supports(p, deeper, target).ok();
    }
    EXPECT_TRUE(reduced) << "no ring was cut short";
  }
  bool full = false;
  for (const KernelConfig& c :
       Sm90().Candidates(Linear(65, 14336, 4096), target, TuningPolicy::kExhaustive)) {
    full = full || Sm90().Shape(Linear(65, 14336, 4096), c, target).shared_bytes >
                       static_cast<uint32_t>(limit);
  }
  EXPECT_TRUE(full);
}

TEST(Sm90FamilyTest, LaunchIsPersistentWithClusters) {
  const GemmProblem p = Linear(4096, 4096, 4096);
  const LaunchShape s = Sm90().Shape(p, Sm90Config(128, 256, 2, 4, 2), OfflineTarget(90));
  EXPECT_EQ(s.grid[0], 132u);
  EXPECT_EQ(s.block[0], 384u);
  EXPECT_EQ(s.cluster_x, 2u);
  EXPECT_TRUE(s.tensor_maps);
  // A problem of 3 tiles launches 3 CTAs (rounded up to whole clusters).
  const LaunchShape small =
      Sm90().Shape(Linear(300, 128, 64), Sm90Config(128, 128, 2, 4, 2), OfflineTarget(90));
  EXPECT_EQ(small.grid[0], 4u);
}

TEST(Sm90FamilyTest, SpecSaysHowDIsStored) {
  GemmProblem p = Linear(512, 512, 512);
  const KernelConfig c = Sm90Config(128, 128, 2, 4, 1);
  EXPECT_THAT(Sm90().ExtraSpecFields(p, c), HasSubstr("kTmaStore = true"));
  EXPECT_TRUE(Sm90TmaStore(p, c));
  p.d.ld = 513;
  EXPECT_FALSE(Sm90TmaStore(p, c));
  EXPECT_THAT(Sm90().ExtraSpecFields(p, Sm90Config(128, 256, 2, 4, 2)),
              HasSubstr("kConsumers = 2, kClusterM = 2"));
}

TEST(Sm90FamilyTest, Fp32DIsStagedOnlyWithMoreTilesThanSms) {
  // 16 tiles of 128 x 128: one a CTA, stored from registers.
  GemmProblem p = Linear(512, 512, 512);
  p.d.type = p.c.type = DataType::kF32;
  const KernelConfig c = Sm90Config(128, 128, 2, 4, 1);
  EXPECT_FALSE(Sm90TmaStore(p, c));
  EXPECT_THAT(Sm90().ExtraSpecFields(p, c), HasSubstr("kTmaStore = false"));
  // 256 tiles: staged, while rows start and end on 16 bytes (N a multiple of 4).
  p.m = 2048;
  p.n = p.d.ld = 2048;
  EXPECT_TRUE(Sm90TmaStore(p, c));
  EXPECT_THAT(Sm90().ExtraSpecFields(p, c), HasSubstr("kTmaStore = true"));
  p.n = p.d.ld = 2046;
  EXPECT_FALSE(Sm90TmaStore(p, c));
  p.n = 2044;
  p.d.ld = 2048;
  EXPECT_TRUE(Sm90TmaStore(p, c));
  p.d.ld = 2046;
  EXPECT_FALSE(Sm90TmaStore(p, c));
}

// fp32 D's SiLU and GELUs spilled in warpgroup tiles of two m64 blocks and
// in ping-pong tiles; 16-bit D and fp32 D with ReLU keep them.
TEST(Sm90FamilyTest, Fp32DWithSiluOrGeluTakesWarpgroupTilesOf64Rows) {
  const TargetInfo t = OfflineTarget(90);
  GemmProblem p = Linear(4096, 4096, 4096);
  p.d.type = p.c.type = DataType::kF32;
  p.epilogue.activation = Activation::kGeluErf;
  KernelConfig ping_pong = Sm90Config(128, 128, 2, 4, 1);
  ping_pong.ping_pong = true;
  for (const KernelConfig& c : {Sm90Config(256, 128, 2, 4, 1), ping_pong}) {
    EXPECT_THAT(Sm90().Supports(p, c, t),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fp32 D with SiLU")));
  }
  EXPECT_TRUE(Sm90().Supports(p, Sm90Config(128, 256, 2, 4, 1), t).ok());
  for (const KernelConfig& c : Sm90().Candidates(p, t, TuningPolicy::kExhaustive)) {
    EXPECT_EQ(c.block_m / c.warps_m, 64) << c.ToString();
    EXPECT_FALSE(c.ping_pong) << c.ToString();
  }
  p.epilogue.activation = Activation::kRelu;
  EXPECT_TRUE(Sm90().Supports(p, Sm90Config(256, 128, 2, 4, 1), t).ok());
  p.d.type = p.c.type = DataType::kBF16;
  p.epilogue.activation = Activation::kSilu;
  EXPECT_TRUE(Sm90().Supports(p, ping_pong, t).ok());
}

// Short k loops: the fast list also times the cheapest ping-pong tile, whose
// epilogue overlaps the other warpgroup's mainloop, where its tiles are full
// and fill the SMs; long ones keep four.
TEST(Sm90FamilyTest, FastListTimesOnePingPongTileWhereKIsShort) {
  const TargetInfo t = OfflineTarget(90);
  auto ping_pongs = [&](const GemmProblem& p) {
    int n = 0;
    for (const KernelConfig& c : Sm90().Candidates(p, t, TuningPolicy::kFast)) n += c.ping_pong;
    return n;
  };
  EXPECT_EQ(ping_pongs(Linear(4096, 4096, 256)), 1);
  EXPECT_EQ(ping_pongs(Linear(4096, 4096, 512)), 1);
  EXPECT_EQ(ping_pongs(Linear(4096, 4096, 576)), 0);
  EXPECT_EQ(ping_pongs(Linear(4096, 4096, 4096)), 0);
  // Rows that fill no tile, or too few tiles for the SMs.
  EXPECT_EQ(ping_pongs(Linear(1, 32768, 512)), 0);
  EXPECT_EQ(ping_pongs(Linear(128, 256, 256)), 0);
  EXPECT_EQ(ping_pongs(Linear(2048, 2048, 512)), 1);
  EXPECT_EQ(Sm90().Candidates(Linear(4096, 4096, 4096), t, TuningPolicy::kHeuristic).size(), 1u);
}

TEST(Sm90FamilyTest, KernelNameSaysTheCluster) {
  const GemmProblem p = Linear(1024, 1024, 1024);
  const KernelConfig c = Sm90Config(128, 256, 2, 4, 2);
  const KernelSource s = Specialize(p, c, Sm90(), Sm90().Shape(p, c, OfflineTarget(90)), 16);
  EXPECT_THAT(s.kernel_name, HasSubstr("gemm_sm90_bf16_rc_r_128x256x64_w2x1_s4"));
  EXPECT_THAT(s.kernel_name, HasSubstr("_cm2"));
  EXPECT_THAT(c.ToString(), HasSubstr(" cm=2"));
  EXPECT_THAT(Sm90Config(128, 256, 2, 4, 1).ToString(), ::testing::Not(HasSubstr("cm=")));
}

}  // namespace
}  // namespace jitgemm::jit
