// The sm80 family's loads of operands whose rows start on 2 bytes (odd K for
// a row-major A, odd M for a column-major A, ...): cp.async cannot copy
// them, so kernels_src/sm80/tile.cuh reads them into registers, held over a
// k tile's MMAs where the warp tile is small. The specs those kernels get,
// and every proposed config with warp tiles up to 32 x 32 (those that may
// hold) compiling for sm_80 and sm_90a with no spills.
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "core/operand_alignment.h"
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

const KernelFamily& Sm80() { return GetFamily(Family::kSm80); }

// f16 problems whose A, B or both have rows on 2 bytes, with the tile edges,
// bias and C the staged loads meet.
std::vector<GemmProblem> TwoByteRowProblems() {
  std::vector<GemmProblem> out;
  auto add = [&](int64_t m, int64_t n, int64_t k, Layout a, Layout b, BiasMode bias, float beta) {
    GemmProblem p = MakeGemm(m, n, k, DataType::kF16);
    p.a.layout = a;
    p.b.layout = b;
    p.epilogue.bias = bias;
    p.epilogue.beta = beta;
    p.epilogue.activation = Activation::kSilu;
    out.push_back(Canonicalize(p));
  };
  add(2047, 24, 2048, Layout::kColMajor, Layout::kColMajor, BiasMode::kPerColumn, 0.f);  // A
  add(777, 1000, 1023, Layout::kRowMajor, Layout::kColMajor, BiasMode::kNone, 1.f);      // A, B
  add(256, 4095, 512, Layout::kRowMajor, Layout::kRowMajor, BiasMode::kPerRow, 0.f);     // B
  add(64, 11008, 255, Layout::kRowMajor, Layout::kColMajor, BiasMode::kNone, 0.f);       // A, B
  return out;
}

TEST(Sm80StagedLoadsTest, TheProblemsHaveRowsOnTwoBytes) {
  for (const GemmProblem& p : TwoByteRowProblems()) {
    const int a = OperandAlignment(p.a, p.m, p.k, p.batch_count, 16);
    const int b = OperandAlignment(p.b, p.k, p.n, p.batch_count, 16);
    EXPECT_TRUE(a == 2 || b == 2) << DebugString(p) << ": A on " << a << ", B on " << b;
  }
}

TEST(Sm80StagedLoadsTest, SpecCarriesTheTwoByteAlignment) {
  const TargetInfo target = OfflineTarget(90);
  const GemmProblem p = TwoByteRowProblems()[0];
  const auto configs = Sm80().Candidates(p, target, TuningPolicy::kFast);
  ASSERT_FALSE(configs.empty());
  const KernelSource s = Specialize(p, configs[0], Sm80(), Sm80().Shape(p, configs[0], target), 16);
  EXPECT_THAT(s.source, HasSubstr("kAlignA = 2,"));
}

TEST(Sm80StagedLoadsTest, ProposedConfigsCompileForSm80AndSm90aWithoutSpills) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  std::set<std::string> done;
  int compiled = 0;
  for (const char* arch : {"sm_80", "sm_90a"}) {
    const TargetInfo target = OfflineTarget(*ParseArch(arch));
    for (const GemmProblem& p : TwoByteRowProblems()) {
      for (const KernelConfig& c : Sm80().Candidates(p, target, TuningPolicy::kFast)) {
        if ((c.block_m / c.warps_m) * (c.block_n / c.warps_n) > 32 * 32) continue;
        const KernelSource s = Specialize(p, c, Sm80(), Sm80().Shape(p, c, target), 16);
        if (!done.insert(std::string(arch) + s.kernel_name).second) continue;
        compiled += CompilesWithoutSpills(p, c, Sm80(), target, arch);
      }
    }
  }
  EXPECT_GT(compiled, 20);
  std::printf("compiled %d sm80 kernels that may hold rows on 2 bytes, zero spills checked\n",
              compiled);
}

}  // namespace
}  // namespace jitgemm::jit
