// Host-side rules of every kernel family, without a GPU: what the heuristics
// propose is supported, launch shapes are legal and cover the output, and
// what a family cannot do is refused.
#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/candidates.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "support/status_matchers.h"
#include "tests/jit/linear_problem.h"

namespace jitgemm::jit {
namespace {

using ::testing::HasSubstr;

std::vector<GemmProblem> Problems() {
  std::vector<GemmProblem> out;
  for (DataType t : {DataType::kF16, DataType::kBF16, DataType::kF32}) {
    for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{1, 2048, 4096},
                                                              {7, 300, 77},
                                                              {16, 12288, 4096},
                                                              {64, 128, 256},
                                                              {1024, 1024, 1024},
                                                              {257, 513, 191},
                                                              {4096, 4096, 4096},
                                                              {256, 256, 16384}}) {
      out.push_back(Linear(m, n, k, t));
    }
    out.push_back(Linear(33, 65, 47, t, 5));
  }
  return out;
}

TEST(FamiliesTest, ProposedConfigsAreSupportedAndLaunchable) {
  const TargetInfo target = OfflineTarget(90);
  int checked = 0;
  for (const GemmProblem& p : Problems()) {
    for (int mode = 0; mode < 6; ++mode) {
      const TuningPolicy policy = static_cast<TuningPolicy>(mode % 3);
      Options o;
      o.tuning = policy;
      o.constant_b = mode >= 3;
      const std::vector<KernelConfig> configs = ProposeConfigs(p, target, o);
      ASSERT_FALSE(configs.empty()) << DebugString(p) << ": no family serves it";
      if (policy == TuningPolicy::kHeuristic) {
        EXPECT_EQ(configs.size(), 1u);
      }
      if (policy == TuningPolicy::kFast) {
        EXPECT_LE(configs.size(), 8u);
      }
      for (const KernelConfig& c : configs) {
        const KernelFamily& f = GetFamily(c.family);
        const std::string what = DebugString(p) + " " + c.ToString();
        ASSERT_TRUE(f.Supports(p, c, target).ok()) << what;
        const LaunchShape s = f.Shape(p, c, target);
        const int64_t threads = int64_t{s.block[0]} * s.block[1] * s.block[2];
        EXPECT_GE(threads, 32) << what;
        EXPECT_LE(threads, 1024) << what;
        EXPECT_GE(s.grid[0], 1u) << what;
        EXPECT_LE(s.grid[1], 65535u) << what;
        EXPECT_LE(s.grid[2], 65535u) << what;
        EXPECT_LE(s.shared_bytes, static_cast<uint32_t>(target.shared_bytes_per_block_optin))
            << what;
        if (c.family == Family::kSm80 || c.family == Family::kSimt) {
          // Tiles cover D: N along x, M along y, batches (and splits) along z.
          EXPECT_GE(int64_t{s.grid[0]} * c.block_n, p.n) << what;
          EXPECT_GE(int64_t{s.grid[1]} * c.block_m, p.m) << what;
          EXPECT_GE(int64_t{s.grid[2]}, p.batch_count) << what;
        }
        // The sm90 cluster split hands its partial tiles over in shared memory.
        if (c.split_k > 1 && !(c.family == Family::kSm90 && c.cluster_k)) {
          EXPECT_GT(s.workspace_bytes, 0u) << what;
        }
        EXPECT_EQ(s.grid[0] % s.cluster_x, 0u) << what;
        EXPECT_LE(s.cluster_x, 8u) << what;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(FamiliesTest, FamiliesRefuseWhatTheyCannotDo) {
  const TargetInfo target = OfflineTarget(90);
  const GemmProblem half = Linear(100, 100, 100, DataType::kF16);
  GemmProblem f32 = Linear(100, 100, 100, DataType::kF32);
  const KernelFamily& sm80 = GetFamily(Family::kSm80);
  const KernelConfig tc = sm80.Candidates(half, target, TuningPolicy::kHeuristic).front();
  EXPECT_FALSE(sm80.Supports(f32, tc, target).ok()) << "sm80 has no fp32 path";
  KernelConfig bad = tc;
  bad.block_m = 48;  // not a power of two
  EXPECT_FALSE(sm80.Supports(half, bad, target).ok());
  EXPECT_FALSE(sm80.Supports(half, tc, OfflineTarget(75)).ok()) << "mma.sync bf16/f16 needs sm_80";

  const KernelFamily& small = GetFamily(Family::kSmallM);
  const GemmProblem decode = Linear(8, 2048, 4096, DataType::kBF16);
  const KernelConfig sm = small.Candidates(decode, target, TuningPolicy::kHeuristic).front();
  EXPECT_TRUE(small.Supports(decode, sm, target).ok());
  EXPECT_FALSE(small.Supports(Linear(65, 2048, 4096, DataType::kBF16), sm, target).ok())
      << "small_m is for M <= 64";

  // Every valid problem has at least the SIMT family.
  Options o;
  o.tuning = TuningPolicy::kHeuristic;
  EXPECT_EQ(ProposeConfigs(f32, target, o).front().family, Family::kSimt);
}

// The wgmma family has no separate early kernels: under constant_b and PDL
// each of its configs loads its first ring slices' B before the wait.
TEST(FamiliesTest, ConstantBMakesEverySm90ConfigReadBEarly) {
  const TargetInfo hopper = OfflineTarget(90);
  const GemmProblem p = Linear(1024, 1024, 1024, DataType::kF16);
  const KernelFamily& sm90 = GetFamily(Family::kSm90);
  Options o;
  int seen = 0;
  for (const KernelConfig& c : ProposeConfigs(p, hopper, o)) {
    if (c.family != Family::kSm90) continue;
    ++seen;
    EXPECT_FALSE(c.early_b) << c.ToString();
    EXPECT_EQ(sm90.ExtraSpecFields(p, c).find("kEarlyB"), std::string::npos);
  }
  EXPECT_GT(seen, 0);
  o.constant_b = true;
  for (const KernelConfig& c : ProposeConfigs(p, hopper, o)) {
    if (c.family != Family::kSm90) continue;
    EXPECT_TRUE(c.early_b && c.pdl) << c.ToString();
    EXPECT_NE(sm90.ExtraSpecFields(p, c).find("kEarlyB = true"), std::string::npos);
    EXPECT_NE(c.ToString().find(" eb=1"), std::string::npos);
  }
  o.pdl = false;  // no early read without PDL
  for (const KernelConfig& c : ProposeConfigs(p, hopper, o)) {
    EXPECT_FALSE(c.early_b) << c.ToString();
  }
}

TEST(FamiliesTest, ConstantBAddsEarlyWeightKernelsUnderPdlOnly) {
  const TargetInfo hopper = OfflineTarget(90), ampere = OfflineTarget(80);
  const GemmProblem decode = Linear(1, 2048, 4096, DataType::kBF16);
  auto early_count = [](const std::vector<KernelConfig>& configs) {
    int n = 0;
    for (const KernelConfig& c : configs) n += c.early_b && c.family == Family::kSmallM;
    return n;
  };
  Options o;
  EXPECT_EQ(early_count(ProposeConfigs(decode, hopper, o)), 0) << "needs the promise";
  o.constant_b = true;
  const std::vector<KernelConfig> fast = ProposeConfigs(decode, hopper, o);
  EXPECT_EQ(early_count(fast), 3) << "bulk x, bulk x in CTA pairs, x by cp.async";
  EXPECT_LE(fast.size(), 8u);
  EXPECT_GT(fast.size(), 3u) << "the L2-prefetch kernels are still timed";
  o.tuning = TuningPolicy::kHeuristic;
  const std::vector<KernelConfig> heuristic = ProposeConfigs(decode, hopper, o);
  ASSERT_EQ(heuristic.size(), 1u);
  const KernelConfig& e = heuristic.front();
  EXPECT_TRUE(e.early_b && e.pdl) << "the early kernel leads";
  EXPECT_EQ(e.stages, 16) << "2048 x 4096: the whole weight slice of a warp in the ring";
  EXPECT_EQ(e.x_copy, 1) << "M <= 4: bulk copies without clusters";
  EXPECT_EQ(e.block_m, 8);
  EXPECT_NE(e.ToString().find(" eb=1 xc=1"), std::string::npos) << e.ToString();
  const KernelFamily& small = GetFamily(Family::kSmallM);
  EXPECT_EQ(small.Shape(decode, e, hopper).cluster_x, 1u);
  // block_m 8 asks for the shared memory of a 16-row x block (8 warps along
  // K, 16 chunks each: 16 rows of 16 * 64 + 64 bytes a warp), as measured.
  EXPECT_EQ(small.Shape(decode, e, hopper).shared_bytes, 8u * 16 * (16 * 64 + 64));
  const std::string fields = small.ExtraSpecFields(decode, e);
  EXPECT_NE(fields.find("kSmallMEarlyB = true"), std::string::npos) << fields;
  EXPECT_NE(fields.find("kSmallMTrigger = 0"), std::string::npos) << fields;
  EXPECT_NE(fields.find("kSmallMXCluster = 1"), std::string::npos) << fields;
  // x in two pieces along K, each warp's 16 chunks split 8 / 8, and two
  // accumulator sets.
  EXPECT_NE(fields.find("kSmallMXParts = 2"), std::string::npos) << fields;
  EXPECT_NE(fields.find("kSmallMXInterleave = 8"), std::string::npos) << fields;
  EXPECT_NE(fields.find("kSmallMAccSets = 2"), std::string::npos) << fields;
  KernelConfig plain = e;
  plain.early_b = false;
  plain.x_copy = 0;
  EXPECT_EQ(plain.ToString().find("eb="), std::string::npos) << "old keys unchanged";
  EXPECT_EQ(plain.ToString().find("xc="), std::string::npos) << "old keys unchanged";
  EXPECT_EQ(small.ExtraSpecFields(decode, plain).find("EarlyB"), std::string::npos);
  EXPECT_EQ(small.ExtraSpecFields(decode, plain).find("XCluster"), std::string::npos);
  EXPECT_EQ(small.ExtraSpecFields(decode, plain).find("XParts"), std::string::npos);
  EXPECT_EQ(small.ExtraSpecFields(decode, plain).find("AccSets"), std::string::npos);

  // M = 8: bulk x alone leads; the multicast pairs follow, launched as
  // clusters of two.
  const GemmProblem m8 = Linear(8, 2048, 4096, DataType::kBF16);
  Options fast8 = o;
  fast8.tuning = TuningPolicy::kFast;
  const std::vector<KernelConfig> all8 = ProposeConfigs(m8, hopper, fast8);
  ASSERT_GE(all8.size(), 2u);
  EXPECT_EQ(all8[0].x_copy, 1) << all8[0].ToString();
  const KernelConfig pairs = all8[1];
  EXPECT_EQ(pairs.x_copy, 2) << pairs.ToString();
  EXPECT_EQ(small.Shape(m8, pairs, hopper).cluster_x, 2u);
  EXPECT_EQ(small.Shape(m8, pairs, hopper).grid[0] % 2, 0u);
  // Bulk x needs the whole slice of a warp in the ring: 4096 x 4096 is too big.
  const GemmProblem big = Linear(1, 4096, 4096, DataType::kBF16);
  o.tuning = TuningPolicy::kFast;
  for (const KernelConfig& c : ProposeConfigs(big, hopper, o))
    EXPECT_EQ(c.x_copy, 0) << c.ToString();
  EXPECT_EQ(early_count(ProposeConfigs(big, hopper, o)), 1);
  KernelConfig forced = e;
  EXPECT_FALSE(small.Supports(decode, forced, ampere).ok()) << "bulk copies need sm_90";
  forced.x_copy = 3;
  EXPECT_FALSE(small.Supports(decode, forced, hopper).ok());

  EXPECT_EQ(early_count(ProposeConfigs(m8, hopper, o)), 3);
  // M = 16: the early kernels lead, 32-row tiles in CTA pairs along K first
  // (one cluster each, the reduction in distributed shared memory), then the
  // pairs with 16 warps along K, bulk x and the 8-warp pairs; two tiles a warp
  // without early weights follow.
  const GemmProblem m16 = Linear(16, 2048, 4096, DataType::kBF16);
  const std::vector<KernelConfig> all16 = ProposeConfigs(m16, hopper, o);
  ASSERT_GE(all16.size(), 5u);
  EXPECT_FALSE(all16[4].early_b) << all16[4].ToString();
  EXPECT_EQ(all16[4].block_n, 32) << all16[4].ToString();
  const std::vector<KernelConfig> m16_configs(all16.begin(), all16.begin() + 4);
  const KernelConfig& ck = m16_configs[0];
  EXPECT_TRUE(ck.cluster_k && ck.early_b) << ck.ToString();
  EXPECT_EQ(ck.split_k, 2) << ck.ToString();
  EXPECT_EQ(ck.block_n, 32) << ck.ToString();
  EXPECT_EQ(ck.x_copy, 1) << ck.ToString();
  EXPECT_EQ(ck.stages, 8) << "2048 x 4096: a warp's whole half-K slice in the ring";
  EXPECT_NE(ck.ToString().find(" ck=1"), std::string::npos) << ck.ToString();
  const LaunchShape ck_shape = small.Shape(m16, ck, hopper);
  EXPECT_EQ(ck_shape.grid[0], 64u);
  EXPECT_EQ(ck_shape.grid[1], 2u);
  EXPECT_EQ(ck_shape.cluster_x, 1u);
  EXPECT_EQ(ck_shape.cluster_y, 2u);
  EXPECT_EQ(ck_shape.workspace_bytes, 0u) << "the pair reduces on chip";
  EXPECT_EQ(ck_shape.shared_bytes, 120u << 10) << "the measured request";
  KernelConfig ck_late = ck;
  ck_late.early_b = false;
  // x (8 warp ranges x 16 rows x (8 chunks + a pad) x 64 bytes), then the
  // peer's 16 x 32 fp32 tile that rank 0 receives.
  EXPECT_EQ(small.Shape(m16, ck_late, hopper).shared_bytes, 8u * 16 * 576 + 16 * 32 * 4);
  EXPECT_NE(small.ExtraSpecFields(m16, ck).find("kSmallMClusterK = true"), std::string::npos);
  EXPECT_FALSE(ck.runtime_m) << "exact M measured faster";
  EXPECT_NE(small.ExtraSpecFields(m16, ck).find("kSmallMXInterleave = 4"), std::string::npos)
      << "8 chunks a warp, in two pieces";
  EXPECT_EQ(m16_configs[1].x_copy, 2) << m16_configs[1].ToString();
  EXPECT_EQ(m16_configs[1].warps_m, 16) << m16_configs[1].ToString();
  EXPECT_EQ(m16_configs[1].stages, 8) << m16_configs[1].ToString();
  EXPECT_EQ(m16_configs[2].x_copy, 1) << m16_configs[2].ToString();
  EXPECT_EQ(m16_configs[3].x_copy, 2) << m16_configs[3].ToString();
  EXPECT_EQ(m16_configs[3].warps_m, 8) << m16_configs[3].ToString();
  EXPECT_EQ(small.Shape(m16, m16_configs[1], hopper).block[0], 512u);
  EXPECT_EQ(early_count(m16_configs), 4) << "the early kernel with x by cp.async gives way";
  for (const KernelConfig& c : ProposeConfigs(Linear(16, 4096, 4096, DataType::kBF16), hopper, o))
    EXPECT_FALSE(c.family == Family::kSmallM && c.cluster_k)
        << "4096 x 4096 would take two waves: " << c.ToString();
  KernelConfig bad = ck;
  EXPECT_FALSE(small.Supports(m16, bad, ampere).ok()) << "clusters need sm_90";
  bad.split_k = 1;
  EXPECT_FALSE(small.Supports(m16, bad, hopper).ok()) << "a cluster along K needs split_k >= 2";
  bad = ck;
  bad.x_copy = 2;
  EXPECT_FALSE(small.Supports(m16, bad, hopper).ok()) << "no multicast with a K cluster";
  bad = ck;
  bad.split_k = 16;
  EXPECT_FALSE(small.Supports(m16, bad, hopper).ok()) << "at most 8 CTAs a cluster";
  EXPECT_EQ(early_count(ProposeConfigs(decode, ampere, o)), 0) << "no PDL before sm_90";
  o.pdl = false;
  EXPECT_EQ(early_count(ProposeConfigs(decode, hopper, o)), 0) << "no PDL, no early reads";
}

// Without constant_b, M = 5..8 also times bulk x with the weights loaded
// after the wait (x in one piece, so the L2 prefetch of the slice stays).
TEST(FamiliesTest, OptionsDecidePdl) {
  const TargetInfo hopper = OfflineTarget(90), ampere = OfflineTarget(80);
  const GemmProblem p = Linear(64, 128, 256, DataType::kF16);
  Options o;
  for (const KernelConfig& c : ProposeConfigs(p, ampere, o)) EXPECT_FALSE(c.pdl);
  o.pdl = false;
  for (const KernelConfig& c : ProposeConfigs(p, hopper, o)) EXPECT_FALSE(c.pdl);
}

}  // namespace
}  // namespace jitgemm::jit
