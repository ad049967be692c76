// Problems whose lines or batches start less aligned than their pointers,
// under every backend policy: a D with rows of 4099 elements, batches that
// keep 4 bytes or 64, with and without C and an activation. The cuBLAS route
// must tell cuBLASLt the alignment the lines keep (core/operand_alignment.h):
// told the pointers' alone, Lt's heuristic suggested algorithms that faulted
// with a misaligned address, which ends the CUDA context.
#include <cuda_runtime.h>

#include <cstdint>
#include <random>
#include <string>

#include "core/option_names.h"
#include "gtest/gtest.h"
#include "jitgemm/plan.h"
#include "tests/gpu/gpu_case.h"

namespace jitgemm::support {
namespace {

Case OddStridedCase(int64_t d_stride, bool with_c, Activation act) {
  Case c;
  GemmProblem& p = c.problem;
  p.m = 130;
  p.n = 4096;
  p.k = 16;
  p.batch_count = 4;
  p.a = {DataType::kBF16, Layout::kRowMajor, 16, 2080};
  p.b = {DataType::kBF16, Layout::kColMajor, 16, 65536};
  p.c = {DataType::kBF16, Layout::kRowMajor, 4096, 532480};
  p.d = {DataType::kBF16, Layout::kRowMajor, 4099, d_stride};
  p.epilogue.beta = with_c ? 1.0f : 0.0f;
  p.epilogue.activation = act;
  if (act != Activation::kNone) {
    p.epilogue.bias = BiasMode::kPerColumn;
    p.epilogue.bias_batch_stride = 4096;
  }
  p = Canonicalize(p);
  c.options.pointer_alignment = 16;
  return c;
}

TEST(OddStridesTest, EveryPolicyRunsAndMatchesFloat64) {
  JITGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(30);
  for (BackendPolicy policy :
       {BackendPolicy::kCublasOnly, BackendPolicy::kJitOnly, BackendPolicy::kAuto}) {
    for (int64_t d_stride : {int64_t{532870}, int64_t{532896}}) {
      for (bool with_c : {true, false}) {
        for (Activation act : {Activation::kNone, Activation::kSilu}) {
          Case c = OddStridedCase(d_stride, with_c, act);
          c.options.backend = policy;
          c.tag = std::string(BackendPolicyName(policy));
          auto plan = Plan::Create(c.problem, c.options);
          ASSERT_TRUE(plan.ok()) << DebugString(c.problem) << ": " << plan.status();
          const std::string err = RunCase(c, *plan, rng);
          std::printf("%-6s %-70s %s\n", c.tag.c_str(), plan->info().kernel_name.c_str(),
                      err.empty() ? "ok" : err.c_str());
          if (!err.empty() && !ReportCaseFailure(c, c.problem, plan->info().kernel_name, err)) {
            return;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace jitgemm::support
