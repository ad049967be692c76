// Pins the exact keys of a few kernels. A key moves only when something the
// kernel is built from moves: the embedded headers its unit includes, the
// specialiser's output for it, the compile options, the ABI version. If this
// test fails after such a change, the change invalidates those cached cubins
// (say so in the commit) and the new keys go here. If it fails after a change
// to anything else (a new family, another family's headers), that change
// would invalidate cubins it has no bearing on: fix the change, not the pin.
#include <string>

#include "cache/key.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "jit/specializer.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit {
namespace {

std::string KeyHex(const GemmProblem& problem, const KernelConfig& config) {
  const GemmProblem p = Canonicalize(problem);
  const KernelFamily& f = GetFamily(config.family);
  const TargetInfo target = OfflineTarget(90);
  EXPECT_TRUE(f.Supports(p, config, target).ok()) << f.Supports(p, config, target);
  const KernelSource source = SpecializeFor(p, config, target, 16);
  return cache::MakeCacheKey(KeyText(source, "sm_90a", /*nvrtc_version=*/13000)).Hex();
}

GemmProblem Linear() {
  GemmProblem p = MakeGemm(64, 128, 256, DataType::kF16);
  p.b.layout = Layout::kColMajor;
  p.epilogue.bias = BiasMode::kPerColumn;
  p.epilogue.activation = Activation::kRelu;
  return p;
}

TEST(KernelKeyPinTest, Simt) {
  KernelConfig c;
  c.family = Family::kSimt;
  c.block_m = c.block_n = 32;
  c.block_k = 16;
  c.warps_m = 2;
  c.warps_n = 1;
  c.pdl = false;
  EXPECT_EQ(KeyHex(Linear(), c), "23a1cea1fe21e911613b177f212ded86");
}

TEST(KernelKeyPinTest, Sm80) {
  KernelConfig c;
  c.family = Family::kSm80;
  c.block_m = c.block_n = 64;
  c.block_k = 32;
  c.warps_m = c.warps_n = 2;
  c.stages = 3;
  EXPECT_EQ(KeyHex(Linear(), c), "f503320d14c285e04e1140b5e8370ceb");
}

TEST(KernelKeyPinTest, Elementwise) {
  const KernelFamily& f = GetFamily(Family::kElementwise);
  const GemmProblem p = Canonicalize(Linear());
  EXPECT_EQ(KeyHex(p, f.Candidates(p, OfflineTarget(90), TuningPolicy::kHeuristic).at(0)),
            "20c9ed1f46061549464a10f29023c19c");
}

}  // namespace
}  // namespace jitgemm::jit
