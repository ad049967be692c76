// The small-M family's candidate rules on Hopper, without a GPU: which
// variants (bulk x, two tiles per warp, the wgmma path, L2 fill hints) it
// proposes where, and what it refuses. docs/kernels.md has the measurements
// behind each rule.
#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/candidates.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "jit/specializer.h"
#include "support/status_matchers.h"
#include "tests/jit/linear_problem.h"

namespace jitgemm::jit {
namespace {

using ::jitgemm::support::IsOk;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(FamiliesTest, SmallMBulkXWithLateWeightsAtM5To8) {
  const TargetInfo hopper = OfflineTarget(90), ampere = OfflineTarget(80);
  const KernelFamily& small = GetFamily(Family::kSmallM);
  Options o;
  o.tuning = TuningPolicy::kFast;
  auto late_bulk = [](const std::vector<KernelConfig>& configs) {
    std::vector<size_t> at;
    for (size_t i = 0; i < configs.size(); ++i) {
      if (configs[i].x_copy == 1 && !configs[i].early_b) at.push_back(i);
    }
    return at;
  };
  const GemmProblem m8 = Linear(8, 2048, 4096, DataType::kBF16);
  const std::vector<KernelConfig> configs = ProposeConfigs(m8, hopper, o);
  ASSERT_EQ(late_bulk(configs), std::vector<size_t>{1}) << "second, after the heuristic kernel";
  const KernelConfig& late = configs[1];
  EXPECT_TRUE(late.pdl);
  EXPECT_EQ(late.stages, 16) << "a warp's whole slice in the ring, as bulk x needs";
  const std::string fields = small.ExtraSpecFields(m8, late);
  EXPECT_NE(fields.find("kSmallMAccSets = 2"), std::string::npos) << fields;
  EXPECT_EQ(fields.find("kSmallMXParts"), std::string::npos) << "one piece: " << fields;
  EXPECT_EQ(fields.find("kSmallMEarlyB"), std::string::npos) << fields;
  EXPECT_NE(fields.find("kSmallMTrigger = 1"), std::string::npos) << fields;
  EXPECT_EQ(small.Shape(m8, late, hopper).shared_bytes, 100u << 10) << "the measured request";
  EXPECT_EQ(late_bulk(ProposeConfigs(Linear(5, 2048, 4096, DataType::kBF16), hopper, o)).size(),
            1u);
  for (int m : {1, 4, 9, 16}) {
    EXPECT_TRUE(
        late_bulk(ProposeConfigs(Linear(m, 2048, 4096, DataType::kBF16), hopper, o)).empty())
        << "M = " << m << ": x by cp.async measured faster";
  }
  EXPECT_TRUE(late_bulk(ProposeConfigs(m8, ampere, o)).empty()) << "bulk copies need sm_90";
  o.constant_b = true;
  const std::vector<KernelConfig> promised = ProposeConfigs(m8, hopper, o);
  ASSERT_EQ(late_bulk(promised).size(), 1u);
  EXPECT_TRUE(promised[0].early_b) << "the early kernels still lead under constant_b";
}

TEST(FamiliesTest, SmallMTwoTilesPerWarpWhereXTrafficBinds) {
  const TargetInfo hopper = OfflineTarget(90);
  const KernelFamily& small = GetFamily(Family::kSmallM);
  // Without the constant_b promise (early-weight kernels are dropped then).
  auto candidates = [&](int m, int n, TuningPolicy policy) {
    std::vector<KernelConfig> out;
    for (const KernelConfig& c :
         small.Candidates(Linear(m, n, 4096, DataType::kBF16), hopper, policy)) {
      if (!c.early_b) out.push_back(c);
    }
    return out;
  };
  // 2048 rows of W fill the SMs with one 16-row tile a CTA; from M = 9 every
  // CTA would read as much x as W, so two tiles a warp lead, with PDL.
  for (int m : {16, 32, 64}) {
    std::vector<KernelConfig> fast = candidates(m, 2048, TuningPolicy::kFast);
    ASSERT_FALSE(fast.empty()) << m;
    if (m > 32) {  // the wgmma kernels lead there (next test)
      ASSERT_GT(fast.front().block_k, 32) << fast.front().ToString();
      fast.erase(fast.begin(), fast.begin() + 2);
    }
    EXPECT_EQ(fast.front().block_n, 32) << fast.front().ToString();
    EXPECT_EQ(fast.front().split_k, 1) << fast.front().ToString();
    EXPECT_TRUE(fast.front().pdl) << fast.front().ToString();
    const bool one_tile_timed = std::any_of(fast.begin(), fast.end(), [](const KernelConfig& c) {
      return c.block_n == 16 && c.split_k == 1;
    });
    EXPECT_TRUE(one_tile_timed) << m;
  }
  // Untimed: M = 32 takes it (1.15x cuBLAS measured), M = 64 does not (0.82x).
  const std::vector<KernelConfig> m32 = candidates(32, 2048, TuningPolicy::kHeuristic);
  ASSERT_EQ(m32.size(), 1u);
  EXPECT_EQ(m32.front().block_n, 32);
  EXPECT_TRUE(candidates(64, 2048, TuningPolicy::kHeuristic).front().block_k > 32)
      << "M = 64: the wgmma kernel";
  // Under constant_b, early kernels lead up to M = 8, the early K pairs at
  // M = 9..16 (measured faster than two tiles a warp there).
  Options cb;
  cb.tuning = TuningPolicy::kHeuristic;
  cb.constant_b = true;
  EXPECT_TRUE(ProposeConfigs(Linear(8, 2048, 2048, DataType::kBF16), hopper, cb).front().early_b);
  const KernelConfig m16_lead =
      ProposeConfigs(Linear(16, 2048, 2048, DataType::kBF16), hopper, cb).front();
  EXPECT_TRUE(m16_lead.early_b && m16_lead.cluster_k) << m16_lead.ToString();
  const KernelConfig m24 =
      ProposeConfigs(Linear(24, 2048, 2048, DataType::kBF16), hopper, cb).front();
  EXPECT_FALSE(m24.early_b) << m24.ToString();
  EXPECT_EQ(m24.block_n, 32) << m24.ToString();
  // 4096 rows already give each CTA two tiles: no heuristic small_m at M = 32.
  EXPECT_TRUE(candidates(32, 4096, TuningPolicy::kHeuristic).empty());
}

TEST(FamiliesTest, SmallMWgmmaPathOnHopperAboveM16) {
  const TargetInfo hopper = OfflineTarget(90), ampere = OfflineTarget(80);
  const KernelFamily& small = GetFamily(Family::kSmallM);
  const GemmProblem m64 = Linear(64, 2048, 4096, DataType::kBF16);
  const std::vector<KernelConfig> fast = small.Candidates(m64, hopper, TuningPolicy::kFast);
  ASSERT_GE(fast.size(), 2u);
  for (int i : {0, 1}) {
    const KernelConfig& c = fast[i];
    EXPECT_GT(c.block_k, 32) << c.ToString();
    EXPECT_EQ(c.block_m, 64) << c.ToString();
    EXPECT_EQ(c.block_n, 16) << c.ToString();
    EXPECT_TRUE(small.Supports(m64, c, hopper).ok());
    EXPECT_FALSE(small.Supports(m64, c, ampere).ok()) << "wgmma is sm_90a only";
    const LaunchShape s = small.Shape(m64, c, hopper);
    EXPECT_EQ(s.block[0], 128u) << "one warpgroup";
    EXPECT_EQ(s.grid[0], 2048u / 16);
    EXPECT_GE(s.shared_bytes, static_cast<uint32_t>(c.stages * (c.block_k / 64) * 10240));
  }
  for (const KernelConfig& c : small.Candidates(m64, ampere, TuningPolicy::kFast)) {
    EXPECT_EQ(c.block_k, 32) << c.ToString();
  }
  // M = 17..32: timed, not first; M <= 16: none.
  const std::vector<KernelConfig> m32 =
      small.Candidates(Linear(32, 2048, 4096, DataType::kBF16), hopper, TuningPolicy::kFast);
  EXPECT_EQ(m32.front().block_k, 32);
  EXPECT_TRUE(
      std::any_of(m32.begin(), m32.end(), [](const KernelConfig& c) { return c.block_k > 32; }));
  for (const KernelConfig& c :
       small.Candidates(Linear(16, 2048, 4096, DataType::kBF16), hopper, TuningPolicy::kFast)) {
    EXPECT_EQ(c.block_k, 32) << c.ToString();
  }
  // Rows not 16 bytes apart: refused.
  GemmProblem odd = Linear(64, 2048, 4100 - 1, DataType::kBF16);
  EXPECT_FALSE(small.Supports(odd, fast[0], hopper).ok());
  KernelConfig bad = fast[0];
  bad.stages = 2;
  EXPECT_THAT(small.Supports(m64, bad, hopper),
              jitgemm::support::StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("stages")));
}

// Kernel names carry the arch where the kernel exists only in sm_90a
// (wgmma, bulk x, clusters) and end in _rtm where M is a run-time value.
TEST(FamiliesTest, SmallMKernelNamesSayArchAndRuntimeM) {
  const TargetInfo hopper = OfflineTarget(90);
  const KernelFamily& small = GetFamily(Family::kSmallM);
  auto name = [&](const GemmProblem& p, const KernelConfig& c) {
    EXPECT_TRUE(small.Supports(p, c, hopper).ok()) << c.ToString();
    return SpecializeFor(p, c, hopper, 16).kernel_name;
  };
  const GemmProblem m64 = Linear(64, 2048, 4096, DataType::kBF16);
  KernelConfig wg = small.Candidates(m64, hopper, TuningPolicy::kFast).at(0);
  ASSERT_GT(wg.block_k, 32) << wg.ToString();
  wg.runtime_m = false;
  EXPECT_THAT(name(m64, wg), StartsWith("gemm_small_m_sm90a_bf16_"));
  EXPECT_THAT(name(m64, wg), Not(EndsWith("_rtm")));
  wg.runtime_m = true;
  EXPECT_THAT(name(m64, wg), EndsWith("_rtm"));

  const GemmProblem m16 = Linear(16, 2048, 4096, DataType::kBF16);
  KernelConfig ring = small.Candidates(m16, hopper, TuningPolicy::kFast).at(0);
  ring.x_copy = 0;
  ring.cluster_k = false;
  ring.early_b = false;
  ring.split_k = 1;
  EXPECT_THAT(name(m16, ring), StartsWith("gemm_small_m_bf16_"));
  ring.split_k = 2;
  ring.cluster_k = true;
  ring.x_copy = 1;
  EXPECT_THAT(name(m16, ring), StartsWith("gemm_small_m_sm90a_bf16_"));
  EXPECT_THAT(name(m16, ring), HasSubstr("_ck"));
}

TEST(FamiliesTest, SmallMAsksForL2FillsBySize) {
  const TargetInfo hopper = OfflineTarget(90);
  const KernelFamily& small = GetFamily(Family::kSmallM);
  auto fields = [&](int n) {
    const GemmProblem p = Linear(1, n, 4096, DataType::kBF16);
    return small.ExtraSpecFields(p, small.Candidates(p, hopper, TuningPolicy::kHeuristic).front());
  };
  EXPECT_THAT(fields(2048), HasSubstr("kSmallMLoadHint = 128;")) << "16 MB of weights";
  EXPECT_THAT(fields(4096), HasSubstr("kSmallMLoadHint = 128;")) << "32 MB";
  EXPECT_THAT(fields(12288), HasSubstr("kSmallMLoadHint = 256;")) << "96 MB, past L2";
}

// A column-major x streams through the per-warp ring (shared memory for the
// ring's slots) only with 8-element columns and block_m 8; otherwise the CTA
// stages its whole slice (shared memory for all of it). The host sizes
// shared memory as the kernel's Traits decide.
TEST(FamiliesTest, SmallMColumnMajorXRidesTheRingOnlyWithEightElementColumns) {
  const TargetInfo hopper = OfflineTarget(90);
  const KernelFamily& small = GetFamily(Family::kSmallM);
  auto column_x = [](int64_t m, int64_t lda) {
    GemmProblem p = Linear(m, 4096, 4096, DataType::kBF16);
    p.a.layout = Layout::kColMajor;
    p.a.ld = lda;
    return Canonicalize(p);
  };
  KernelConfig c;
  c.family = Family::kSmallM;
  c.block_m = 8;
  c.block_n = 16;
  c.block_k = 32;
  c.warps_m = 8;
  c.warps_n = 1;
  c.stages = 4;
  c.runtime_m = true;
  c.pdl = false;                           // no padding to one CTA per SM
  constexpr uint32_t kRing = 8 * 4 * 512;  // warps x stages x one 8-row group
  constexpr uint32_t kSlice = 128 * 512;   // 128 chunks of one 8-row group
  for (int64_t m : {1, 4, 8}) {
    const GemmProblem p = column_x(m, 8);
    ASSERT_THAT(small.Supports(p, c, hopper), IsOk());
    EXPECT_EQ(small.Shape(p, c, hopper).shared_bytes, kRing) << "M = " << m;
  }
  EXPECT_EQ(small.Shape(column_x(8, 16), c, hopper).shared_bytes, kSlice) << "lda 16: staged";
  EXPECT_EQ(small.Shape(column_x(4, 4), c, hopper).shared_bytes, kSlice) << "lda 4: staged";
  KernelConfig sixteen = c;
  sixteen.block_m = 16;
  EXPECT_EQ(small.Shape(column_x(8, 8), sixteen, hopper).shared_bytes, 2 * kSlice)
      << "two 8-row groups: staged";
  GemmProblem row = Linear(8, 4096, 4096, DataType::kBF16);
  EXPECT_EQ(small.Shape(row, c, hopper).shared_bytes, kRing) << "a row-major x rides the ring";
}

}  // namespace
}  // namespace jitgemm::jit
