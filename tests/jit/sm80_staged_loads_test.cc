// The sm80 family's loads of operands whose rows are not whole 16-byte
// chunks (kernels_src/sm80/tile.cuh):
// - rows that start on 2 bytes (odd K for a row-major A, odd M for a
//   column-major A, ...): cp.async cannot copy them, so they are read into
//   registers, held over a k tile's MMAs where the warp tile is small. The
//   specs those kernels get, and every proposed config with warp tiles up to
//   32 x 32 (those that may hold) compiling for sm_80 and sm_90a with no
//   spills;
// - rows on 4, 8 or 16 bytes that end inside a chunk: the edge chunk's
//   copies take a source size. Every proposed config of such problems
//   compiles for sm_80 and sm_90a with no spills.
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

// Problems whose A, B or both have rows on 4, 8 or 16 bytes ending inside a
// 16-byte chunk, in M, N or K, with the epilogues that take registers.
std::vector<GemmProblem> EdgeChunkProblems() {
  std::vector<GemmProblem> out;
  auto add = [&](int64_t m, int64_t n, int64_t k, DataType t, Layout a, Layout b, int64_t ld,
                 BiasMode bias, float beta) {
    GemmProblem p = MakeGemm(m, n, k, t);
    p.a.layout = a;
    p.b.layout = b;
    (a == Layout::kColMajor ? p.a : p.b).ld = ld;
    p.epilogue.bias = bias;
    p.epilogue.beta = beta;
    p.epilogue.activation = Activation::kGeluTanh;
    out.push_back(Canonicalize(p));
  };
  add(2048, 2050, 1024, DataType::kBF16, Layout::kRowMajor, Layout::kRowMajor, 2050,
      BiasMode::kPerColumn, 0.f);  // B on 4 bytes, N edge
  add(996, 512, 2048, DataType::kF16, Layout::kColMajor, Layout::kColMajor, 996, BiasMode::kNone,
      1.f);  // A on 8 bytes, M edge
  add(1024, 100, 4096, DataType::kF16, Layout::kRowMajor, Layout::kRowMajor, 104, BiasMode::kPerRow,
      1.f);  // B on 16 bytes, N edge
  add(777, 777, 1002, DataType::kBF16, Layout::kColMajor, Layout::kColMajor, 780, BiasMode::kNone,
      0.f);  // A and B on 4 / 8 bytes, M and K edges
  return out;
}

TEST(Sm80EdgeChunksTest, TheProblemsHaveEdgeChunksOnFourBytesOrMore) {
  for (const GemmProblem& p : EdgeChunkProblems()) {
    bool edge = false;
    for (const bool is_a : {true, false}) {
      const Operand& op = is_a ? p.a : p.b;
      const int64_t rows = is_a ? p.m : p.k, cols = is_a ? p.k : p.n;
      const int64_t inner = op.layout == Layout::kRowMajor ? cols : rows;
      const int align = OperandAlignment(op, rows, cols, p.batch_count, 16);
      EXPECT_GE(align, 4) << DebugString(p);
      edge |= inner % 8 != 0;
    }
    EXPECT_TRUE(edge) << DebugString(p);
  }
}

TEST(Sm80EdgeChunksTest, ProposedConfigsCompileForSm80AndSm90aWithoutSpills) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  std::vector<CompileRequest> requests;
  std::set<std::string> done;
  for (const char* arch : {"sm_80", "sm_90a"}) {
    const TargetInfo target = OfflineTarget(*ParseArch(arch));
    for (const GemmProblem& p : EdgeChunkProblems()) {
      for (const KernelConfig& c : Sm80().Candidates(p, target, TuningPolicy::kFast)) {
        const KernelSource s = Specialize(p, c, Sm80(), Sm80().Shape(p, c, target), 16);
        if (!done.insert(std::string(arch) + s.kernel_name).second) continue;
        requests.push_back({s.source, s.kernel_name, s.name_expression, arch});
      }
    }
  }
  const std::vector<absl::StatusOr<CompiledKernel>> compiled = CompileInParallel(requests);
  for (size_t i = 0; i < compiled.size(); ++i) {
    ASSERT_TRUE(compiled[i].ok()) << requests[i].program_name << ": " << compiled[i].status();
    EXPECT_EQ(compiled[i]->spill_store_bytes + compiled[i]->spill_load_bytes, 0)
        << requests[i].program_name << " " << requests[i].arch << " spills:\n"
        << compiled[i]->log;
  }
  EXPECT_GT(requests.size(), 40u);
  std::printf("compiled %zu sm80 kernels with edge chunks, zero spills checked\n", requests.size());
}

}  // namespace
}  // namespace jitgemm::jit
