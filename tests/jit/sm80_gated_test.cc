// The sm80 family's gated problems (kernels_src/sm80/gate.cuh): a tile of
// block_n columns of B covers block_n / 2 columns of D, the spec says it is
// gated, and the configs the fast policy proposes compile for sm_80 and
// sm_90a with no spills, for both layouts of B and an up half that starts
// off 16-byte alignment.
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
#include "tests/jit/compile_check.h"

namespace jitgemm::jit {
namespace {

using ::testing::HasSubstr;

GemmProblem Gated(int64_t m, int64_t n, int64_t k, Layout b_layout) {
  GemmProblem p = MakeGemm(m, n, k, DataType::kBF16);
  p.b.layout = b_layout;
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.activation = Activation::kSilu;
  p.epilogue.bias = BiasMode::kPerColumn;
  return Canonicalize(p);
}

KernelConfig Tile(int bm, int bn, int wm, int wn, int split = 1) {
  KernelConfig c;
  c.family = Family::kSm80;
  c.block_m = bm;
  c.block_n = bn;
  c.block_k = 64;
  c.warps_m = wm;
  c.warps_n = wn;
  c.stages = 3;
  c.split_k = split;
  return c;
}

const KernelFamily& Sm80() { return GetFamily(Family::kSm80); }

TEST(Sm80GatedTest, ATileCoversHalfItsColumnsOfD) {
  const TargetInfo target = OfflineTarget(90);
  const GemmProblem p = Gated(300, 1000, 512, Layout::kColMajor);
  const KernelConfig c = Tile(128, 128, 2, 2);
  ASSERT_TRUE(Sm80().Supports(p, c, target).ok()) << Sm80().Supports(p, c, target);
  const LaunchShape s = Sm80().Shape(p, c, target);
  EXPECT_EQ(s.grid[0], 16u);  // ceil(1000 / 64)
  EXPECT_EQ(s.grid[1], 3u);   // ceil(300 / 128)
  EXPECT_EQ(s.workspace_bytes, 0u);

  GemmProblem plain = p;
  plain.epilogue.gate = Gate::kNone;
  EXPECT_EQ(Sm80().Shape(plain, c, target).grid[0], 8u);
}

TEST(Sm80GatedTest, SplitKWorkspaceHoldsBothHalvesOfEveryTile) {
  const TargetInfo target = OfflineTarget(90);
  const GemmProblem p = Gated(64, 256, 4096, Layout::kRowMajor);
  const KernelConfig c = Tile(64, 64, 2, 2, 4);
  ASSERT_TRUE(Sm80().Supports(p, c, target).ok()) << Sm80().Supports(p, c, target);
  const LaunchShape s = Sm80().Shape(p, c, target);
  EXPECT_EQ(s.grid[0], 8u);  // 256 / 32
  EXPECT_EQ(s.grid[2], 4u);
  // 8 tickets padded to 256 bytes, then 4 splits of 64 x 64 floats a tile.
  EXPECT_EQ(s.workspace_bytes, 256u + 8u * 4 * 64 * 64 * 4);
}

TEST(Sm80GatedTest, SpecSaysGatedAndOnlyThen) {
  const TargetInfo target = OfflineTarget(90);
  const GemmProblem p = Gated(300, 1000, 512, Layout::kColMajor);
  const KernelConfig c = Tile(128, 128, 2, 2);
  const KernelSource s = Specialize(p, c, Sm80(), Sm80().Shape(p, c, target), 16);
  EXPECT_THAT(s.source, HasSubstr("kGate = 1;"));
  EXPECT_THAT(s.kernel_name, HasSubstr("_glu"));
  GemmProblem plain = p;
  plain.epilogue.gate = Gate::kNone;
  const KernelSource q = Specialize(plain, c, Sm80(), Sm80().Shape(plain, c, target), 16);
  EXPECT_THAT(q.source, ::testing::Not(HasSubstr("kGate")));
}

TEST(Sm80GatedTest, ProposedConfigsCompileForSm80AndSm90aWithoutSpills) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  std::set<std::string> done;
  int compiled = 0;
  for (const char* arch : {"sm_80", "sm_90a"}) {
    const TargetInfo target = OfflineTarget(*ParseArch(arch));
    // Large, split-K and odd sizes; N = 1001 puts a row-major B's up half
    // 2 bytes off alignment (element-wise copies).
    for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{
             {2048, 2048, 1024}, {64, 256, 4096}, {200, 1001, 320}}) {
      for (Layout b_layout : {Layout::kColMajor, Layout::kRowMajor}) {
        const GemmProblem p = Gated(m, n, k, b_layout);
        for (const KernelConfig& c : Sm80().Candidates(p, target, TuningPolicy::kFast)) {
          const std::string id = std::string(arch) + c.ToString() +
                                 (b_layout == Layout::kRowMajor ? "r" : "c") +
                                 (n % 8 == 0 ? "" : "odd");
          if (!done.insert(id).second) continue;
          compiled += CompilesWithoutSpills(p, c, Sm80(), target, arch);
        }
      }
    }
  }
  EXPECT_GT(compiled, 20);
  std::printf("compiled %d sm80 gated kernels, zero spills checked\n", compiled);
}

}  // namespace
}  // namespace jitgemm::jit
