// The sm80 family's tiles of 64 x 64 a warp (128 accumulators a thread, at
// the 255-register limit) with every epilogue: no, per-column and per-row
// bias, with and without C, each activation, 16-bit and fp32 D. Computing
// each store's address on its own, these spilled 12-120 bytes wherever no
// per-column bias was read (2026-11-28, bench/results/README.md); the compile
// test of every shipped config only used per-column bias and ReLU. Every such
// config the fast policy proposes compiles for sm_90a with no spills.
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "jit/nvrtc_compiler.h"
#include "jit/specializer.h"
#include "tests/jit/compile_check.h"

namespace jitgemm::jit {
namespace {

// One compile request per kernel, for sm_90a.
std::vector<CompileRequest> FullWarpTileRequests(const TargetInfo& target) {
  const KernelFamily& sm80 = GetFamily(Family::kSm80);
  std::vector<CompileRequest> requests;
  std::set<std::string> done;
  for (DataType d_type : {DataType::kBF16, DataType::kF32}) {
    for (BiasMode bias : {BiasMode::kNone, BiasMode::kPerColumn, BiasMode::kPerRow}) {
      for (bool with_c : {false, true}) {
        for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kSilu,
                               Activation::kGeluTanh, Activation::kGeluErf}) {
          GemmProblem p = MakeGemm(2048, 2048, 1024, DataType::kBF16);
          p.b.layout = Layout::kColMajor;
          p.c.type = p.d.type = d_type;
          p.epilogue.bias = bias;
          p.epilogue.beta = with_c ? 1.0f : 0.0f;
          p.epilogue.activation = act;
          p = Canonicalize(p);
          for (const KernelConfig& c : sm80.Candidates(p, target, TuningPolicy::kFast)) {
            if (c.block_m / c.warps_m != 64 || c.block_n / c.warps_n != 64) continue;
            const KernelSource s = Specialize(p, c, sm80, sm80.Shape(p, c, target), 16);
            if (done.insert(s.kernel_name).second) {
              requests.push_back({s.source, s.kernel_name, s.name_expression, "sm_90a"});
            }
          }
        }
      }
    }
  }
  return requests;
}

TEST(Sm80EpilogueTest, FullWarpTilesCompileWithoutSpillsForEveryEpilogue) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  const std::vector<CompileRequest> requests = FullWarpTileRequests(OfflineTarget(90));
  const std::vector<absl::StatusOr<CompiledKernel>> compiled = CompileInParallel(requests);
  int spilled = 0;
  for (size_t i = 0; i < compiled.size(); ++i) {
    const std::string& name = requests[i].program_name;
    ASSERT_TRUE(compiled[i].ok()) << name << ": " << compiled[i].status();
    const int spills = compiled[i]->spill_store_bytes + compiled[i]->spill_load_bytes;
    spilled += spills != 0;
    EXPECT_EQ(spills, 0) << name << " spills:\n" << compiled[i]->log;
  }
  // 2 D types x 3 bias modes x C or not x 5 activations, each in the fast
  // list's full-warp tiles (four of them at this size).
  EXPECT_GE(requests.size(), 60u * 3);
  std::printf("compiled %zu sm80 full-warp-tile kernels for sm_90a, %d spilled\n", requests.size(),
              spilled);
}

}  // namespace
}  // namespace jitgemm::jit
