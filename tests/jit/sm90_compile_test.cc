// Every config the sm90 family can propose, compiled for sm_90a: no
// spills, no serialised wgmma, setmaxnreg honoured.

#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/candidates.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "jit/nvrtc_compiler.h"
#include "jit/specializer.h"
#include "tests/jit/compile_check.h"
#include "tests/jit/sm90_problems.h"

namespace jitgemm::jit {
namespace {

using sm90_test::Sm90;
using ::testing::HasSubstr;
using ::testing::Not;

// Every config the family can propose, for both B layouts and for 16-bit
// (TMA store) and fp32 (register store) D, compiled for sm_90a.
TEST(Sm90FamilyTest, EveryConfigCompilesWithoutSpillsOrSerialisedWgmma) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  const TargetInfo target = OfflineTarget(90);
  std::set<std::string> done;
  std::vector<CompileRequest> requests;
  // The second size has too few tiles for the SMs: split-K configs; the third
  // leaves a last wave less than half full: its tiles alone split, also those
  // of 128 accumulators a thread. Gated tiles (two halves, then the gate) only
  // at the first: they take no split-K.
  for (int64_t m : {2048, 256, 3000}) {
    for (Gate gate : {Gate::kNone, Gate::kHalves}) {
      for (Layout b_layout : {Layout::kColMajor, Layout::kRowMajor}) {
        for (DataType d_type : {DataType::kBF16, DataType::kF32}) {
          // fp32 D takes each transcendental activation's own form
          // (common/activation_f32.cuh), with its own register pressure;
          // 16-bit D the lightest and the heaviest of them.
          for (Activation act : {Activation::kSilu, Activation::kGeluTanh, Activation::kGeluErf}) {
            if (gate != Gate::kNone && m != 2048) continue;
            if (d_type != DataType::kF32 && act == Activation::kGeluTanh) continue;
            GemmProblem p = MakeGemm(m, 2048, 2048, DataType::kF16);
            p.b.layout = b_layout;
            p.d.type = p.c.type = d_type;
            // fp32 D rows 8 bytes past 16-byte alignment: the register
            // epilogue (at the first size, with C and K-major B, the staged one).
            if (d_type == DataType::kF32 && b_layout == Layout::kColMajor && gate == Gate::kNone &&
                m != 2048) {
              p.d.ld = p.n + 2;
            }
            // fp32 D over more tiles than SMs: staged TMA stores (and registers
            // for the last tile).
            if (d_type == DataType::kF32 && gate == Gate::kNone && m == 2048) p.m = 4096;
            // 16-bit D with GELU-erf: the per-row bias with C (two m64
            // blocks a warpgroup spilled there), the per-column one without.
            const bool row_bias = d_type != DataType::kF32 && act == Activation::kGeluErf &&
                                  b_layout == Layout::kColMajor && gate == Gate::kNone;
            p.epilogue.bias = row_bias ? BiasMode::kPerRow : BiasMode::kPerColumn;
            p.epilogue.activation = act;
            p.epilogue.gate = gate;
            // C read with K-major B, by the TMA-store epilogue (bf16 D, and
            // fp32 D at the first size) and the register epilogue (fp32 D at
            // the others); no C with N-major B.
            if (gate == Gate::kNone && b_layout == Layout::kColMajor) {
              p.epilogue.beta = 1.0f;
            }
            p = Canonicalize(p);
            for (const KernelConfig& c : Sm90().Candidates(p, target, TuningPolicy::kExhaustive)) {
              const std::string id = c.ToString() + DataTypeName(d_type) +
                                     (b_layout == Layout::kRowMajor ? "n" : "k") + GateName(gate) +
                                     ActivationName(act) + (row_bias ? "r" : "c");
              if (!done.insert(id).second) continue;
              const KernelSource s = Specialize(p, c, Sm90(), Sm90().Shape(p, c, target), 16);
              requests.push_back({s.source, s.kernel_name, s.name_expression, "sm_90a"});
            }
          }
        }
      }
    }
  }
  const std::vector<absl::StatusOr<CompiledKernel>> kernels = CompileInParallel(requests);
  int compiled = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const std::string& name = requests[i].program_name;
    ASSERT_TRUE(kernels[i].ok()) << name << ": " << kernels[i].status();
    ++compiled;
    EXPECT_EQ(kernels[i]->spill_store_bytes + kernels[i]->spill_load_bytes, 0) << name << "\n"
                                                                               << kernels[i]->log;
    EXPECT_THAT(kernels[i]->log, ::testing::Not(HasSubstr("serialized"))) << name;
    // C7508: setmaxnreg ignored.
    EXPECT_THAT(kernels[i]->log, ::testing::Not(HasSubstr("C7508"))) << name;
  }
  EXPECT_GE(compiled, 8);
  std::printf("compiled %d sm90 configs for sm_90a: no spills, wgmma not serialised\n", compiled);
}

}  // namespace
}  // namespace jitgemm::jit
