// The sm80 family with fp32 D and a transcendental activation but no bias:
// the branch-free fp32 forms (kernels_src/common/activation_f32.cuh) keep
// many values in flight, and with expf GELU-tanh spilled 240-264 bytes in
// tiles of 128 x 128 and more. Every config the fast policy proposes, for
// each activation, compiles for sm_80 and sm_90a with no spills.
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "jit/nvrtc_compiler.h"
#include "jit/specializer.h"
#include "tests/jit/compile_check.h"

namespace jitgemm::jit {
namespace {

TEST(Sm80F32ActivationTest, ProposedConfigsCompileWithoutSpills) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  const KernelFamily& sm80 = GetFamily(Family::kSm80);
  std::set<std::string> done;
  int compiled = 0;
  for (const char* arch : {"sm_80", "sm_90a"}) {
    const TargetInfo target = OfflineTarget(*ParseArch(arch));
    for (Activation act : {Activation::kSilu, Activation::kGeluTanh, Activation::kGeluErf}) {
      GemmProblem p = MakeGemm(2048, 2048, 512, DataType::kBF16);
      p.b.layout = Layout::kColMajor;
      p.c.type = p.d.type = DataType::kF32;
      p.epilogue.activation = act;
      p = Canonicalize(p);
      for (const KernelConfig& c : sm80.Candidates(p, target, TuningPolicy::kFast)) {
        const KernelSource s = Specialize(p, c, sm80, sm80.Shape(p, c, target), 16);
        if (!done.insert(std::string(arch) + s.kernel_name).second) continue;
        compiled += CompilesWithoutSpills(p, c, sm80, target, arch);
      }
    }
  }
  EXPECT_GE(compiled, 12);
}

}  // namespace
}  // namespace jitgemm::jit
