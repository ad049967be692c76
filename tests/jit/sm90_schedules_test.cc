// How the sm90 family divides work among warpgroups and CTAs: ping-pong
// warpgroups on alternate tiles, split-K where tiles leave SMs idle or a
// last wave part empty, and splits in two within a cluster of two.

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
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

using ::jitgemm::support::IsOk;
using ::jitgemm::support::StatusIs;
using sm90_test::BatchedLinear;
using sm90_test::Linear;
using sm90_test::Sm90;
using ::testing::HasSubstr;
using ::testing::Not;

// Ping-pong: two consumer warpgroups on alternate tiles of at most 192
// accumulators a thread each; never split; at K = 2048 and with fewer tiles
// than four waves, proposed only for exhaustive tuning.
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
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("192 accumulators")));
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
  // 128 x 128, 64 x 256, 128 x 192 and 128 x 160, alone and in pairs.
  EXPECT_EQ(exhaustive, 8);
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

}  // namespace
}  // namespace jitgemm::jit
