// Each candidate rule of the small-M family (jit/families/small_m_candidates.cc)
// does what its name says: the table is run with and without it on a problem
// where it applies. docs/kernels.md has the measurements behind each rule.
#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/families/small_m_geometry.h"
#include "jit/launcher.h"
#include "tests/jit/linear_problem.h"

namespace jitgemm::jit {
namespace {

using ::testing::ElementsAre;

struct WithAndWithout {
  std::vector<KernelConfig> with, without;
};

WithAndWithout Rule(const char* rule, int64_t m, int64_t n, int sm, int sms,
                    TuningPolicy policy = TuningPolicy::kHeuristic) {
  TargetInfo target = OfflineTarget(sm);
  target.multiprocessors = sms;
  const GemmProblem p = Linear(m, n, 4096, DataType::kBF16);
  const KernelFamily& f = GetFamily(Family::kSmallM);
  return {small_m::Candidates(f, p, target, policy),
          small_m::Candidates(f, p, target, policy, rule)};
}

bool Any(const std::vector<KernelConfig>& cs, bool (*pred)(const KernelConfig&)) {
  return std::any_of(cs.begin(), cs.end(), pred);
}

// The first config that does not read the weights early (what runs without
// Options::constant_b).
KernelConfig FirstLate(const std::vector<KernelConfig>& cs) {
  for (const KernelConfig& c : cs) {
    if (!c.early_b) return c;
  }
  ADD_FAILURE() << "no config without early weights";
  return {};
}

TEST(SmallMRulesTest, TheTableInOrder) {
  std::vector<std::string> names;
  for (const char* n : small_m::CandidateRuleNames()) names.push_back(n);
  EXPECT_THAT(names, ElementsAre("nothing-above-m32-below-hopper", "one-cta-per-sm",
                                 "two-tiles-per-warp-where-x-binds", "above-m16-only-where-x-binds",
                                 "runtime-m-bucket", "timed-variants", "early-weights",
                                 "cluster-k-pairs", "early-kernels-lead-where-they-win",
                                 "late-weight-bulk-x", "wgmma-above-m16", "fast-times-eight"));
}

TEST(SmallMRulesTest, NothingAboveM32BelowHopper) {
  const WithAndWithout r = Rule("nothing-above-m32-below-hopper", 48, 1664, 80, 108);
  EXPECT_TRUE(r.with.empty());
  EXPECT_FALSE(r.without.empty());
}

TEST(SmallMRulesTest, OneCtaPerSm) {
  // 12288 rows of W over 132 SMs: 6 tiles a CTA, as 3 per warp on 2 warps.
  const WithAndWithout r = Rule("one-cta-per-sm", 1, 12288, 90, 132);
  EXPECT_EQ(FirstLate(r.with).block_n, 96);
  EXPECT_EQ(FirstLate(r.with).warps_n, 2);
  EXPECT_EQ(FirstLate(r.with).warps_m, 4);
  EXPECT_EQ(FirstLate(r.without).block_n, 16);
}

TEST(SmallMRulesTest, TwoTilesPerWarpWhereXBinds) {
  const WithAndWithout r = Rule("two-tiles-per-warp-where-x-binds", 16, 2048, 90, 132);
  EXPECT_EQ(FirstLate(r.with).block_n, 32);
  EXPECT_EQ(FirstLate(r.without).block_n, 16);
}

TEST(SmallMRulesTest, AboveM16OnlyWhereXBinds) {
  const WithAndWithout r = Rule("above-m16-only-where-x-binds", 24, 4096, 80, 108);
  EXPECT_TRUE(r.with.empty());
  EXPECT_FALSE(r.without.empty());
}

TEST(SmallMRulesTest, RuntimeMBucket) {
  const WithAndWithout r = Rule("runtime-m-bucket", 3, 2048, 80, 108);
  ASSERT_EQ(r.with.size(), 1u);
  EXPECT_TRUE(r.with[0].runtime_m);
  EXPECT_EQ(r.with[0].block_m, 8);
  EXPECT_TRUE(r.without.empty());
}

TEST(SmallMRulesTest, TimedVariants) {
  const WithAndWithout r = Rule("timed-variants", 3, 2048, 80, 108, TuningPolicy::kFast);
  EXPECT_TRUE(Any(r.with, [](const KernelConfig& c) { return !c.runtime_m; })) << "exact M";
  EXPECT_TRUE(Any(r.with, [](const KernelConfig& c) { return c.split_k == 2; }));
  EXPECT_EQ(r.without.size(), 1u);
}

TEST(SmallMRulesTest, EarlyWeights) {
  const WithAndWithout r = Rule("early-weights", 1, 2048, 90, 132);
  EXPECT_TRUE(r.with.front().early_b);
  EXPECT_TRUE(Any(r.with, [](const KernelConfig& c) { return c.x_copy == 2; })) << "CTA pairs";
  EXPECT_FALSE(Any(r.without, [](const KernelConfig& c) { return c.early_b; }));
}

TEST(SmallMRulesTest, ClusterKPairs) {
  const WithAndWithout r = Rule("cluster-k-pairs", 16, 2048, 90, 132);
  EXPECT_TRUE(r.with.front().cluster_k);
  EXPECT_FALSE(r.with.front().runtime_m);
  EXPECT_FALSE(Any(r.without, [](const KernelConfig& c) { return c.cluster_k; }));
}

TEST(SmallMRulesTest, EarlyKernelsLeadWhereTheyWin) {
  const WithAndWithout r = Rule("early-kernels-lead-where-they-win", 8, 2048, 90, 132);
  EXPECT_TRUE(r.with.front().early_b);
  EXPECT_FALSE(Any(r.without, [](const KernelConfig& c) { return c.early_b; }));
}

TEST(SmallMRulesTest, LateWeightBulkX) {
  auto late_bulk = [](const KernelConfig& c) { return c.x_copy == 1 && !c.early_b; };
  const WithAndWithout r = Rule("late-weight-bulk-x", 6, 2048, 90, 132);
  EXPECT_TRUE(Any(r.with, late_bulk));
  EXPECT_FALSE(Any(r.without, late_bulk));
}

TEST(SmallMRulesTest, WgmmaAboveM16) {
  const WithAndWithout r = Rule("wgmma-above-m16", 64, 2048, 90, 132);
  EXPECT_EQ(r.with.front().block_k, 128);
  EXPECT_FALSE(Any(r.without, [](const KernelConfig& c) { return c.block_k > 32; }));
}

TEST(SmallMRulesTest, FastTimesEight) {
  int cut = 0;
  for (int64_t m = 1; m <= 64; ++m) {
    for (int64_t n : {2048, 4096, 12288}) {
      const WithAndWithout r = Rule("fast-times-eight", m, n, 90, 132, TuningPolicy::kFast);
      EXPECT_LE(r.with.size(), 8u) << m << " x " << n;
      if (r.without.size() > 8) {
        ++cut;
        EXPECT_EQ(r.with.size(), 8u);
        EXPECT_TRUE(std::equal(r.with.begin(), r.with.end(), r.without.begin())) << "a prefix";
      }
    }
  }
  EXPECT_GT(cut, 0) << "some problem proposes more than 8";
}

}  // namespace
}  // namespace jitgemm::jit
