// The sm90 (TMA + wgmma) family's host rules, and every config it can
// propose compiled for sm_90a with no spills and no serialised wgmma.
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/candidates.h"
#include "jit/families/sm90.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "jit/nvrtc_compiler.h"
#include "jit/specializer.h"
#include "support/status_matchers.h"
#include "tests/jit/sm90_config.h"

namespace jitgemm::jit {
namespace {

using ::jitgemm::support::IsOk;
using ::jitgemm::support::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

const KernelFamily& Sm90() { return GetFamily(Family::kSm90); }

GemmProblem Linear(int64_t m, int64_t n, int64_t k, DataType t = DataType::kBF16) {
  GemmProblem p = MakeGemm(m, n, k, t);
  p.b.layout = Layout::kColMajor;
  return Canonicalize(p);
}

// `batch` packed problems of Linear's layouts, one after another.
GemmProblem BatchedLinear(int64_t m, int64_t n, int64_t k, int64_t batch) {
  GemmProblem p = Linear(m, n, k);
  p.batch_count = batch;
  p.a.batch_stride = m * k;
  p.b.batch_stride = n * k;
  p.d.batch_stride = p.c.batch_stride = m * n;
  return p;
}

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
  // N-major B arrives in 64-column boxes; a gated tile's halves too.
  GemmProblem n_major = p;
  n_major.b.layout = Layout::kRowMajor;
  n_major.b.ld = 0;
  n_major = Canonicalize(n_major);
  EXPECT_THAT(Sm90().Supports(n_major, c224, t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("K-major")));
  for (const KernelConfig& c : Sm90().Candidates(n_major, t, TuningPolicy::kExhaustive)) {
    EXPECT_EQ(c.block_n % 64, 0) << c.ToString();
  }
  GemmProblem gated = Linear(384, 2304, 3072);
  gated.epilogue.gate = Gate::kHalves;
  gated = Canonicalize(gated);
  EXPECT_THAT(Sm90().Supports(gated, Sm90Config(128, 224, 2, 4, 1), t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no gate")));
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
  // N-major B splits over the cluster in 64-column blocks.
  GemmProblem nn = MakeGemm(1024, 1024, 1024, DataType::kBF16);
  EXPECT_THAT(Sm90().Supports(Canonicalize(nn), Sm90Config(128, 64, 2, 6, 2), t),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("64-column")));
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

// Ping-pong: two consumer warpgroups on alternate tiles of at most 128
// accumulators a thread each; never split, proposed only for exhaustive tuning.
TEST(Sm90FamilyTest, PingPongTilesAreWholeTilesPerWarpgroup) {
  const GemmProblem p = Linear(2048, 2048, 2048);
  const TargetInfo target = OfflineTarget(90);
  KernelConfig c = Sm90Config(128, 128, 2, 6, 2);
  c.ping_pong = true;
  EXPECT_TRUE(Sm90().Supports(p, c, target).ok()) << Sm90().Supports(p, c, target);
  EXPECT_EQ(c.ToString(), "sm90 bm=128 bn=128 bk=64 wm=2 wn=1 st=6 sk=1 pdl=1 rm=0 cm=2 pp=1");
  const KernelSource s = Specialize(p, c, Sm90(), Sm90().Shape(p, c, target), 16);
  EXPECT_THAT(s.source, HasSubstr("kPingPong = true"));
  EXPECT_THAT(s.kernel_name, HasSubstr("_cm2_pp"));
  c.ping_pong = false;
  EXPECT_THAT(Specialize(p, c, Sm90(), Sm90().Shape(p, c, target), 16).source,
              Not(HasSubstr("kPingPong")));

  KernelConfig wide = Sm90Config(128, 256, 2, 4, 1);  // 256 accumulators a warpgroup
  wide.ping_pong = true;
  EXPECT_THAT(Sm90().Supports(p, wide, target),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("128 accumulators")));
  KernelConfig one = Sm90Config(64, 128, 1, 4, 1);
  one.ping_pong = true;
  EXPECT_THAT(Sm90().Supports(p, one, target),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ping-pong")));
  KernelConfig split = Sm90Config(64, 256, 2, 4, 1);
  split.ping_pong = true;
  split.split_k = 2;
  EXPECT_THAT(Sm90().Supports(p, split, target),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ping-pong")));

  for (TuningPolicy policy : {TuningPolicy::kHeuristic, TuningPolicy::kFast}) {
    for (const KernelConfig& f : Sm90().Candidates(p, target, policy)) {
      EXPECT_FALSE(f.ping_pong) << f.ToString();
    }
  }
  int exhaustive = 0;
  for (const KernelConfig& e : Sm90().Candidates(p, target, TuningPolicy::kExhaustive)) {
    exhaustive += e.ping_pong ? 1 : 0;
  }
  EXPECT_EQ(exhaustive, 4);  // 128 x 128 and 64 x 256, alone and in pairs
}

TEST(Sm90FamilyTest, SplitsKWhereTilesLeaveSmsIdle) {
  const GemmProblem p = Linear(1024, 1024, 1024);
  bool split = false;
  for (const KernelConfig& c : Sm90().Candidates(p, OfflineTarget(90), TuningPolicy::kExhaustive)) {
    split = split || c.split_k > 1;
  }
  EXPECT_TRUE(split);
  KernelConfig c = Sm90Config(128, 128, 2, 4, 1);
  c.split_k = 2;
  const LaunchShape s = Sm90().Shape(p, c, OfflineTarget(90));
  EXPECT_EQ(s.grid[0], 128u);
  // 64 tiles x 2 consumers: tickets, then 2 partial 64 x 128 fp32 tiles each.
  EXPECT_EQ(s.workspace_bytes, 512u + 64u * 2 * 2 * 64 * 128 * 4);
  KernelConfig wide = Sm90Config(128, 256, 2, 4, 1);
  wide.split_k = 2;
  EXPECT_THAT(Sm90().Supports(p, wide, OfflineTarget(90)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("64 accumulators")));
  c.split_k = 17;
  EXPECT_THAT(Sm90().Supports(p, c, OfflineTarget(90)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("split_k")));
  // 16 k-tiles cannot feed 12 splits.
  c.split_k = 12;
  EXPECT_FALSE(Sm90().Supports(p, c, OfflineTarget(90)).ok());
  // Large problems fill the SMs without splitting every tile.
  for (const KernelConfig& big :
       Sm90().Candidates(Linear(8192, 8192, 8192), OfflineTarget(90), TuningPolicy::kExhaustive)) {
    EXPECT_TRUE(big.split_k == 1 || big.split_units > 0) << big.ToString();
  }
}

TEST(Sm90FamilyTest, SplitsOnlyALastWaveLessThanHalfFull) {
  const TargetInfo target = OfflineTarget(90);
  // 3000 x 3000 in 128 x 256 tiles: 288 = 2 x 132 + 24.
  const GemmProblem p = Linear(3000, 3000, 3072);
  bool proposed = false;
  for (const KernelConfig& c : Sm90().Candidates(p, target, TuningPolicy::kExhaustive)) {
    if (c.split_units == 0) continue;
    const int64_t units = (3000 + c.block_m * c.cluster_m - 1) / (c.block_m * c.cluster_m) *
                          ((3000 + c.block_n - 1) / c.block_n);
    const int64_t ctas = 132 / c.cluster_m;
    EXPECT_GT(c.split_k, 1) << c.ToString();
    EXPECT_EQ(c.split_units, units % ctas) << c.ToString();
    EXPECT_LE(2 * c.split_units, ctas) << c.ToString();
    EXPECT_LE(c.split_units * c.split_k, ctas) << c.ToString();
    proposed = proposed ||
               (c.block_m == 128 && c.block_n == 256 && c.cluster_m == 1 && c.split_units == 24);
  }
  EXPECT_TRUE(proposed);
  // One split count per tile.
  std::set<std::string> tiles;
  for (const KernelConfig& c : Sm90().Candidates(p, target, TuningPolicy::kExhaustive)) {
    if (c.split_units == 0) continue;
    KernelConfig whole = c;
    whole.split_k = 1;
    whole.split_units = 0;
    EXPECT_TRUE(tiles.insert(whole.ToString()).second) << c.ToString();
  }
  // The fast list takes one last-wave split at most.
  const GemmProblem batched = BatchedLinear(384, 4608, 3072, 4);
  const std::vector<KernelConfig> fast = Sm90().Candidates(batched, target, TuningPolicy::kFast);
  ASSERT_EQ(fast.size(), 4u);
  int splits = 0;
  for (const KernelConfig& f : fast) splits += f.split_units > 0 ? 1 : 0;
  EXPECT_EQ(splits, 1);
  KernelConfig c = Sm90Config(128, 256, 2, 4, 1);
  c.split_k = 4;
  c.split_units = 24;
  EXPECT_THAT(Sm90().Supports(p, c, target), IsOk());
  EXPECT_THAT(Sm90().ExtraSpecFields(p, c), HasSubstr("kSplitUnits = 24;"));
  EXPECT_THAT(c.ToString(), HasSubstr(" sk=4 pdl=1 rm=0 su=24"));
  const LaunchShape s = Sm90().Shape(p, c, target);
  EXPECT_EQ(s.grid[0], 132u);
  // Tickets for 24 units x 2 consumers, then 4 partial 64 x 256 fp32 tiles each.
  EXPECT_EQ(s.workspace_bytes, 256u + 24u * 2 * 4 * 64 * 256 * 4);
  EXPECT_THAT(Specialize(p, c, Sm90(), s, 16).kernel_name, HasSubstr("_sk4_"));
  EXPECT_THAT(Specialize(p, c, Sm90(), s, 16).kernel_name, HasSubstr("_su24"));
  // Every tile of 128 accumulators a thread split: not offered.
  c.split_units = 0;
  EXPECT_THAT(Sm90().Supports(p, c, target),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("64 accumulators")));
  // Two m64 blocks a warpgroup with the reduction spilled.
  KernelConfig tall = Sm90Config(256, 128, 2, 4, 1);
  tall.split_k = 2;
  tall.split_units = 24;
  EXPECT_THAT(Sm90().Supports(p, tall, target),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("64 x 256")));
  c.split_units = 289;
  EXPECT_THAT(Sm90().Supports(p, c, target),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("split_units")));
  c.split_units = 24;
  c.split_k = 1;
  EXPECT_THAT(Sm90().Supports(p, c, target),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("split_units")));
}

// The two splits of a tile in one cluster, reduced through distributed
// shared memory: proposed beside every plain split in two, launched in pairs
// with no workspace, and refused for anything else.
TEST(Sm90FamilyTest, SplitsInTwoWithinAClusterOfTwo) {
  const TargetInfo target = OfflineTarget(90);
  // 256 x 1024 x 4096 (S2's GELU row): 64 tiles of 64 x 64.
  const GemmProblem p = Linear(256, 1024, 4096);
  int twins = 0;
  std::set<std::string> plain;
  const std::vector<KernelConfig> all = Sm90().Candidates(p, target, TuningPolicy::kExhaustive);
  for (const KernelConfig& c : all) {
    if (c.split_k == 2 && !c.cluster_k && c.split_units == 0 && c.cluster_m == 1) {
      plain.insert(absl::StrCat(c.block_m, "x", c.block_n, "w", c.warps_m));
    }
  }
  for (const KernelConfig& c : all) {
    if (!c.cluster_k) continue;
    ++twins;
    EXPECT_EQ(c.split_k, 2) << c.ToString();
    EXPECT_EQ(c.cluster_m, 1) << c.ToString();
    EXPECT_EQ(c.split_units, 0) << c.ToString();
    EXPECT_TRUE(plain.count(absl::StrCat(c.block_m, "x", c.block_n, "w", c.warps_m)))
        << c.ToString() << " has no plain twin";
    EXPECT_THAT(Sm90().Supports(p, c, target), IsOk()) << c.ToString();
  }
  EXPECT_GT(twins, 0);
  KernelConfig c = Sm90Config(64, 64, 1, 8, 1);
  c.split_k = 2;
  c.cluster_k = true;
  ASSERT_THAT(Sm90().Supports(p, c, target), IsOk());
  EXPECT_THAT(c.ToString(), HasSubstr(" sk=2 pdl=1 rm=0 ck=1"));
  EXPECT_THAT(Sm90().ExtraSpecFields(p, c), HasSubstr("kSplitCluster = true;"));
  const LaunchShape s = Sm90().Shape(p, c, target);
  EXPECT_EQ(s.grid[0], 128u);  // 64 tiles, two CTAs each
  EXPECT_EQ(s.cluster_x, 2u);
  EXPECT_EQ(s.workspace_bytes, 0u);
  EXPECT_THAT(Specialize(p, c, Sm90(), s, 16).kernel_name, HasSubstr("_sk2_"));
  EXPECT_THAT(Specialize(p, c, Sm90(), s, 16).kernel_name, HasSubstr("_ck"));
  // More tiles than SM pairs: an even grid of whole pairs.
  const LaunchShape wide = Sm90().Shape(Linear(1000, 1000, 4096), c, target);
  EXPECT_EQ(wide.grid[0], 132u);
  // Shared memory: the partial tile of rank 1 (64 x 64 fp32) and two barriers
  // beside the plain split's ring.
  KernelConfig plain_split = c;
  plain_split.cluster_k = false;
  EXPECT_EQ(Sm90().Shape(p, c, target).shared_bytes,
            Sm90().Shape(p, plain_split, target).shared_bytes + 64 * 64 * 4 + 32);
  for (const auto& [split_k, cluster_m, split_units] :
       {std::tuple{3, 1, 0}, std::tuple{1, 1, 0}, std::tuple{2, 2, 0}, std::tuple{2, 1, 20}}) {
    KernelConfig bad = c;
    bad.split_k = split_k;
    bad.cluster_m = cluster_m;
    bad.split_units = split_units;
    EXPECT_THAT(Sm90().Supports(p, bad, target),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cluster split")))
        << bad.ToString();
  }
}

TEST(Sm90FamilyTest, FastListTimesClusteredTwinsOfSplits) {
  const TargetInfo target = OfflineTarget(90);
  auto has = [](const std::vector<KernelConfig>& list, int bm, int bn, int split, int cluster) {
    for (const KernelConfig& c : list) {
      if (c.block_m == bm && c.block_n == bn && c.split_k == split && c.cluster_m == cluster &&
          !c.cluster_k && c.split_units == 0) {
        return true;
      }
    }
    return false;
  };
  // S2's GELU row: 64 x 64 tiles split in two, in clusters that share B,
  // beat their single-CTA twins by 0.9 us on the H100, so the fast list times
  // the clustered twin in place of the single one.
  const std::vector<KernelConfig> gelu =
      Sm90().Candidates(Linear(256, 1024, 4096, DataType::kF16), target, TuningPolicy::kFast);
  EXPECT_TRUE(has(gelu, 64, 64, 2, 2));
  EXPECT_FALSE(has(gelu, 64, 64, 2, 1));
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

TEST(Sm90FamilyTest, KernelNameSaysTheCluster) {
  const GemmProblem p = Linear(1024, 1024, 1024);
  const KernelConfig c = Sm90Config(128, 256, 2, 4, 2);
  const KernelSource s = Specialize(p, c, Sm90(), Sm90().Shape(p, c, OfflineTarget(90)), 16);
  EXPECT_THAT(s.kernel_name, HasSubstr("gemm_sm90_bf16_rc_r_128x256x64_w2x1_s4"));
  EXPECT_THAT(s.kernel_name, HasSubstr("_cm2"));
  EXPECT_THAT(c.ToString(), HasSubstr(" cm=2"));
  EXPECT_THAT(Sm90Config(128, 256, 2, 4, 1).ToString(), ::testing::Not(HasSubstr("cm=")));
}

// Every config the family can propose, for both B layouts and for 16-bit
// (TMA store) and fp32 (register store) D, compiled for sm_90a.
GemmProblem GatedLinear(int64_t m, int64_t n, int64_t k) {
  GemmProblem p = MakeGemm(m, n, k, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  p.epilogue.activation = Activation::kSilu;
  p.epilogue.gate = Gate::kHalves;
  return Canonicalize(p);
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
    EXPECT_EQ(c.block_n % 128, 0) << c.ToString();
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

TEST(Sm90FamilyTest, EveryConfigCompilesWithoutSpillsOrSerialisedWgmma) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  const TargetInfo target = OfflineTarget(90);
  std::set<std::string> done;
  int compiled = 0;
  // The second size has too few tiles for the SMs: split-K configs; the third
  // leaves a last wave less than half full: its tiles alone split, also those
  // of 128 accumulators a thread. Gated tiles (two halves, then the gate) only
  // at the first: they take no split-K.
  for (int64_t m : {2048, 256, 3000}) {
    for (Gate gate : {Gate::kNone, Gate::kHalves}) {
      for (Layout b_layout : {Layout::kColMajor, Layout::kRowMajor}) {
        for (DataType d_type : {DataType::kBF16, DataType::kF32}) {
          if (gate != Gate::kNone && m != 2048) continue;
          GemmProblem p = MakeGemm(m, 2048, 2048, DataType::kF16);
          p.b.layout = b_layout;
          p.d.type = p.c.type = d_type;
          // fp32 D rows 8 bytes past 16-byte alignment: the register epilogue.
          if (d_type == DataType::kF32 && b_layout == Layout::kColMajor && gate == Gate::kNone) {
            p.d.ld = p.n + 2;
          }
          // fp32 D over more tiles than SMs: staged TMA stores (and registers
          // for the last tile).
          if (d_type == DataType::kF32 && b_layout == Layout::kRowMajor && m == 2048) p.m = 4096;
          p.epilogue.bias = BiasMode::kPerColumn;
          p.epilogue.activation = Activation::kSilu;
          p.epilogue.gate = gate;
          // C read by the TMA-store epilogue (bf16 D) and the register
          // epilogue (fp32 D) with K-major B; no C with N-major B, where fp32
          // D takes the TMA-store epilogue.
          if (gate == Gate::kNone && b_layout == Layout::kColMajor) {
            p.epilogue.beta = 1.0f;
          }
          p = Canonicalize(p);
          for (const KernelConfig& c : Sm90().Candidates(p, target, TuningPolicy::kExhaustive)) {
            const std::string id = c.ToString() + DataTypeName(d_type) +
                                   (b_layout == Layout::kRowMajor ? "n" : "k") + GateName(gate);
            if (!done.insert(id).second) continue;
            const KernelSource s = Specialize(p, c, Sm90(), Sm90().Shape(p, c, target), 16);
            auto k = Compile({s.source, s.kernel_name, s.name_expression, "sm_90a"});
            ASSERT_TRUE(k.ok()) << s.kernel_name << ": " << k.status();
            ++compiled;
            EXPECT_EQ(k->spill_store_bytes + k->spill_load_bytes, 0) << s.kernel_name << "\n"
                                                                     << k->log;
            EXPECT_THAT(k->log, ::testing::Not(HasSubstr("serialized"))) << s.kernel_name;
            // C7508: setmaxnreg ignored.
            EXPECT_THAT(k->log, ::testing::Not(HasSubstr("C7508"))) << s.kernel_name;
          }
        }
      }
    }
  }
  EXPECT_GE(compiled, 8);
  std::printf("compiled %d sm90 configs for sm_90a: no spills, wgmma not serialised\n", compiled);
}

}  // namespace
}  // namespace jitgemm::jit
