// The gated kernels of the sm80 and small_m families (kernels_src/sm80/
// gate.cuh, kernels_src/small_m/traits.cuh WRow) on random problems against
// float64, D poisoned with NaN first and its row padding checked: fp16 /
// bf16 inputs, 16-bit or fp32 D, every activation, no bias or a per-column
// bias of 2N, odd N, odd K and leading dimensions, both layouts of A and D
// (and of B for sm80: a row-major B's up half off 16-byte alignment),
// strided batches (A or B broadcast), seed 001's grouped (B, G, D) layout,
// pointers only element-aligned, split-K; each problem with the next of the
// family's exhaustive configs (small_m: M <= 64 and the nn.Linear weight
// layout, early weights under PDL on some). Then plans: jit-only with 8-byte
// pointers (no TMA) must pick an sm80 kernel, and a decode-sized SwiGLU a
// small_m kernel where that is all the JIT may use.
#include <cuda_runtime.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/jit_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/driver_api.h"
#include "jit/family.h"
#include "jitgemm/plan.h"
#include "support/gpu_env.h"
#include "tests/gpu/gpu_case.h"

namespace jitgemm::support {
namespace {

constexpr Activation kActivations[] = {Activation::kNone, Activation::kRelu, Activation::kGeluTanh,
                                       Activation::kGeluErf, Activation::kSilu};

// small_m: M <= 64 and B column-major (nn.Linear's weights).
Case GatedCase(std::mt19937_64& rng, int index, bool small_m = false) {
  Case c;
  GemmProblem& p = c.problem;
  const DataType in = index % 2 == 0 ? DataType::kF16 : DataType::kBF16;
  p.m = small_m ? Pick<int64_t>(rng, {1, 2, 5, 8, 13, 16, 31, 33, 48, 64})
                : Pick<int64_t>(rng, {1, 7, 16, 33, 64, 65, 127, 200, 257, 512});
  p.n = Pick<int64_t>(rng, {1, 3, 17, 31, 64, 96, 129, 255, 256, 520});
  p.k = Pick<int64_t>(rng, {1, 8, 33, 64, 200, 511, 1024, 2048});
  p.a.type = p.b.type = in;
  p.d.type = index % 4 == 3 ? DataType::kF32 : in;
  p.a.layout = Pick(rng, {Layout::kRowMajor, Layout::kColMajor});
  p.b.layout = small_m ? Layout::kColMajor : Pick(rng, {Layout::kRowMajor, Layout::kColMajor});
  p.d.layout = Pick(rng, {Layout::kRowMajor, Layout::kRowMajor, Layout::kColMajor});
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.activation = kActivations[index % 5];
  p.epilogue.bias = Pick(rng, {BiasMode::kNone, BiasMode::kPerColumn});
  p.epilogue.alpha = Pick(rng, {1.f, 1.f, 0.5f, -1.25f});
  DrawGatedStrides(rng, index, {0, 0, 1, 8}, p);
  if (index % 7 == 2) {  // pointers only element-aligned: narrower copies
    c.options.pointer_alignment = 2;
    c.misalign = true;
  }
  p = Canonicalize(p);
  c.tag = absl::StrCat("#", index);
  return c;
}

// No GPU needed: the generator makes valid problems and covers what the
// header promises.
TEST(GatedKernelsCasesTest, GeneratorCoversTheCases) {
  std::mt19937_64 rng(20261127);
  std::map<std::string, int> seen;
  for (int i = 0; i < 200; ++i) {
    const Case c = GatedCase(rng, i / 2, i % 2 == 1);
    const GemmProblem& p = c.problem;
    ASSERT_TRUE(ValidateProblem(p).ok()) << c.tag << ": " << ValidateProblem(p);
    seen[ActivationName(p.epilogue.activation)]++;
    seen[absl::StrCat("d ", DataTypeName(p.d.type))]++;
    if (p.n % 2 == 1) seen["odd n"]++;
    if (p.k % 8 != 0) seen["odd k"]++;
    if (p.b.layout == Layout::kRowMajor && p.n % 8 != 0) seen["up half off alignment"]++;
    if (p.batch_count > 1) seen["batched"]++;
    if (p.batch_count > 1 && p.a.ld == p.batch_count * p.k) seen["grouped"]++;
    if (p.epilogue.bias == BiasMode::kPerColumn) seen["bias"]++;
    if (p.d.layout == Layout::kColMajor) seen["col-major d"]++;
    if (c.misalign) seen["misaligned"]++;
  }
  for (const char* what : {"none", "relu", "gelu_tanh", "gelu_erf", "silu", "d f16", "d bf16",
                           "d f32", "odd n", "odd k", "up half off alignment", "batched", "grouped",
                           "bias", "col-major d", "misaligned"}) {
    EXPECT_GT(seen[what], 0) << what;
  }
}

// Runs `count` (or $env) random gated problems on `family`'s configs.
class GatedKernelsGpuTest : public GpuDeviceTest {
 protected:
  void RunRandomProblems(jit::Family family_id, const char* env, int count, int seed);
};

void GatedKernelsGpuTest::RunRandomProblems(jit::Family family_id, const char* env, int count,
                                            int seed) {
  const jit::DeviceContext* device = &device_;
  const jit::KernelFamily& family = jit::GetFamily(family_id);
  const bool small_m = family_id == jit::Family::kSmallM;
  count = EnvInt(env, count);
  // Cases and operands draw from separate generators, so that every case is
  // known before the first runs and all compile at once.
  std::mt19937_64 rng(EnvInt("JITGEMM_TEST_SEED", seed));
  std::mt19937_64 data_rng(EnvInt("JITGEMM_TEST_SEED", seed) + 1);
  std::vector<Case> cases;
  std::vector<CompileJob> jobs;
  for (int i = 0; i < count; ++i) {
    Case c = GatedCase(rng, i, small_m);
    const GemmProblem& p = c.problem;
    const auto all = family.Candidates(p, device->target, TuningPolicy::kExhaustive);
    ASSERT_FALSE(all.empty()) << c.tag << " " << DebugString(p) << ": no config";
    jit::KernelConfig config = all[static_cast<size_t>(i) % all.size()];
    config.pdl = i % 2 == 0 && device->target.sm >= 90;
    // Early weights: what a plan makes of the constant_b promise under PDL.
    if (small_m && config.pdl && i % 4 == 0) config.early_b = true;
    if (!family.Supports(p, config, device->target).ok()) config.early_b = false;
    jobs.push_back({p, config, c.options.pointer_alignment});
    cases.push_back(std::move(c));
  }
  const JobsRun r = RunJobs(cases, jobs, *device, data_rng);
  std::printf(
      "%s gated random problems: %d run (%d split-K, %d early weights), %d failures, %zu configs\n",
      jit::FamilyName(family_id), r.ran, r.splits, r.early, r.failures, r.configs.size());
  EXPECT_EQ(r.failures, 0);
  EXPECT_EQ(r.ran, count);
  if (count >= 50) {  // smaller counts: the sanitizers' runs
    EXPECT_GT(r.splits, 0);
  }
}

TEST_F(GatedKernelsGpuTest, Sm80RandomProblemsMatchFloat64Reference) {
  RunRandomProblems(jit::Family::kSm80, "JITGEMM_SM80_GATED_PROBLEMS", 100, 20261127);
}

TEST_F(GatedKernelsGpuTest, SmallMRandomProblemsMatchFloat64Reference) {
  RunRandomProblems(jit::Family::kSmallM, "JITGEMM_SMALL_M_GATED_PROBLEMS", 100, 20261128);
}

// bf16 SwiGLU over nn.Linear weights with a bias on both halves.
Case Swiglu(int64_t m, int64_t n, int64_t k) {
  Case c;
  GemmProblem& p = c.problem;
  p = MakeGemm(m, n, k, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.activation = Activation::kSilu;
  p.epilogue.bias = BiasMode::kPerColumn;
  p = Canonicalize(p);
  return c;
}

// A user's SwiGLU with tensors only 8-byte aligned: no TMA, and a JIT plan
// is an sm80 gated kernel, correct twice in a row (split-K tickets reset).
TEST_F(GatedKernelsGpuTest, JitPlanWithoutTmaAlignmentIsAnSm80Kernel) {
  Case c = Swiglu(96, 688, 1024);
  const GemmProblem& p = c.problem;
  c.options.backend = BackendPolicy::kJitOnly;
  c.options.pointer_alignment = 8;
  c.tag = "swiglu, 8-byte pointers";
  auto plan = Plan::Create(p, c.options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->info().kernel_name, ::testing::HasSubstr("gemm_sm80_"));
  EXPECT_THAT(plan->info().kernel_name, ::testing::HasSubstr("_glu"));
  std::mt19937_64 rng(7);
  for (int run = 0; run < 2; ++run) {
    EXPECT_EQ(RunCase(c, *plan, rng), "") << "run " << run << " " << plan->info().kernel_name;
  }
}

// A decode step's SwiGLU (M = 4, N = 1408, K = 2048, a bias on both halves):
// with the JIT held to the small_m family, the plan is a small_m gated
// kernel, correct twice in a row (split-K counters reset).
TEST_F(GatedKernelsGpuTest, DecodePlanHeldToSmallMIsASmallMKernel) {
  Case c = Swiglu(4, 1408, 2048);
  const GemmProblem& p = c.problem;
  c.options.backend = BackendPolicy::kJitOnly;
  c.tag = "decode swiglu";
  const jit::KernelFamily& family = jit::GetFamily(jit::Family::kSmallM);
  const auto configs = family.Candidates(p, device_.target, TuningPolicy::kFast);
  ASSERT_FALSE(configs.empty());
  bool compiled = false;
  auto backend = JitBackend::Create(p, configs.front(), c.options, device_, &compiled);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_THAT((*backend)->Describe(), ::testing::HasSubstr("gemm_small_m_"));
  EXPECT_THAT((*backend)->Describe(), ::testing::HasSubstr("_glu"));
  std::mt19937_64 rng(11);
  for (int run = 0; run < 2; ++run) {
    EXPECT_EQ(
        RunCase(
            c, p, [&](const GemmPointers& ptrs) { return (*backend)->Run(ptrs, nullptr); }, rng),
        "")
        << "run " << run << " " << (*backend)->Describe();
  }
}

}  // namespace
}  // namespace jitgemm::support
