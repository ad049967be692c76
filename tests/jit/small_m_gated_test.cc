// The small_m family's gated problems (kernels_src/small_m/traits.cuh,
// WRow): a CTA's block_n rows of W are the gate and up rows of block_n / 2
// outputs; the candidates are those of the [gate | up] product the family
// can run gated (split-K through the workspace, no K clusters), and they
// compile for sm_80 and sm_90a with no spills (the wgmma path at M > 16).
#include <array>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "jit/nvrtc_compiler.h"
#include "jit/specializer.h"
#include "support/status_matchers.h"
#include "tests/jit/compile_check.h"

namespace jitgemm::jit {
namespace {

using ::jitgemm::support::StatusIs;
using ::testing::HasSubstr;

GemmProblem Gated(int64_t m, int64_t n, int64_t k) {
  GemmProblem p = MakeGemm(m, n, k, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.activation = Activation::kSilu;
  return Canonicalize(p);
}

const KernelFamily& SmallM() { return GetFamily(Family::kSmallM); }

KernelConfig Ring(int block_n, int split) {
  KernelConfig c;
  c.family = Family::kSmallM;
  c.block_m = 8;
  c.block_n = block_n;
  c.block_k = 32;
  c.warps_m = 8;
  c.warps_n = 1;
  c.stages = 4;
  c.split_k = split;
  return c;
}

TEST(SmallMGatedTest, ACtaCoversHalfItsRowsOfWInColumnsOfD) {
  const TargetInfo target = OfflineTarget(90);
  const GemmProblem p = Gated(4, 1000, 4096);
  const KernelConfig c = Ring(32, 2);
  ASSERT_TRUE(SmallM().Supports(p, c, target).ok()) << SmallM().Supports(p, c, target);
  const LaunchShape s = SmallM().Shape(p, c, target);
  EXPECT_EQ(s.grid[0], 63u);  // ceil(1000 / 16)
  EXPECT_EQ(s.grid[1], 2u);
  // 63 counters padded to 256 bytes, then 2 partial tiles of 8 x 32 floats each.
  EXPECT_EQ(s.workspace_bytes, 256u + 63u * 2 * 8 * 32 * 4);
  EXPECT_THAT(Specialize(p, c, SmallM(), s, 16).source, HasSubstr("kGate = 1;"));
  GemmProblem plain = p;
  plain.epilogue.gate = Gate::kNone;
  EXPECT_EQ(SmallM().Shape(plain, c, target).grid[0], 32u);
  EXPECT_THAT(Specialize(plain, c, SmallM(), SmallM().Shape(plain, c, target), 16).source,
              ::testing::Not(HasSubstr("kGate")));
}

TEST(SmallMGatedTest, RefusesClustersAlongKAndTakesTheWgmmaPath) {
  const TargetInfo target = OfflineTarget(90);
  const GemmProblem p = Gated(4, 2048, 4096);
  KernelConfig cluster = Ring(16, 2);
  cluster.cluster_k = true;
  EXPECT_THAT(SmallM().Supports(p, cluster, target),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("not in a cluster")));
  KernelConfig wg = Ring(32, 1);
  wg.block_m = 64;
  wg.block_k = 128;
  wg.warps_m = 4;
  const GemmProblem m64 = Gated(64, 2048, 4096);
  EXPECT_TRUE(SmallM().Supports(m64, wg, target).ok()) << SmallM().Supports(m64, wg, target);
  EXPECT_EQ(SmallM().Shape(m64, wg, target).grid[0], 128u);  // 2048 / 16
}

TEST(SmallMGatedTest, CandidatesAreTheProductsThatRunGated) {
  const TargetInfo target = OfflineTarget(90);
  for (int64_t m : {1, 16, 48}) {
    const GemmProblem p = Gated(m, 2048, 4096);
    GemmProblem product = p;
    product.n = 4096;
    product.epilogue.gate = Gate::kNone;
    const auto gated = SmallM().Candidates(p, target, TuningPolicy::kFast);
    ASSERT_FALSE(gated.empty()) << "M = " << m;
    std::set<std::string> runnable;
    for (const KernelConfig& c : SmallM().Candidates(product, target, TuningPolicy::kFast)) {
      if (!c.cluster_k) runnable.insert(c.ToString());
    }
    std::set<std::string> got;
    for (const KernelConfig& c : gated) got.insert(c.ToString());
    EXPECT_EQ(got, runnable) << "M = " << m;
  }
}

TEST(SmallMGatedTest, CandidatesCompileForSm80AndSm90aWithoutSpills) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  std::set<std::string> done;
  int compiled = 0;
  for (const char* arch : {"sm_80", "sm_90a"}) {
    const TargetInfo target = OfflineTarget(*ParseArch(arch));
    // Decode sizes, a tail of N, and bias on both halves.
    for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{
             {1, 2048, 4096}, {16, 1408, 2048}, {33, 1000, 1000}, {48, 2048, 4096}}) {
      GemmProblem p = Gated(m, n, k);
      p.epilogue.bias = BiasMode::kPerColumn;
      for (const KernelConfig& c : SmallM().Candidates(p, target, TuningPolicy::kFast)) {
        if (!done.insert(std::string(arch) + c.ToString() + std::to_string(m)).second) continue;
        compiled += CompilesWithoutSpills(p, c, SmallM(), target, arch);
      }
    }
  }
  EXPECT_GT(compiled, 10);
  std::printf("compiled %d small_m gated kernels, zero spills checked\n", compiled);
}

}  // namespace
}  // namespace jitgemm::jit
