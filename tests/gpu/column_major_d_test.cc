// A column-major D is planned as its transpose (core/planned_problem.h) under
// every backend policy: the same D over the same memory, and errors that still
// name the operands as the caller passed them.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jitgemm/plan.h"
#include "support/gpu_env.h"
#include "support/reference.h"
#include "support/status_matchers.h"

namespace jitgemm::support {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ColumnMajorDTest : public ::testing::Test {
 protected:
  void SetUp() override { JITGEMM_REQUIRE_GPU(); }
  std::mt19937_64 rng_{29};
};

TEST_F(ColumnMajorDTest, EveryPolicyPlansTheTransposeAndMatchesFloat64) {
  struct Epi {
    BiasMode bias;
    Activation act;
  };
  for (BackendPolicy policy :
       {BackendPolicy::kJitOnly, BackendPolicy::kCublasOnly, BackendPolicy::kAuto}) {
    for (const Epi& e :
         {Epi{BiasMode::kPerColumn, Activation::kSilu},
          Epi{BiasMode::kPerRow, Activation::kGeluErf}, Epi{BiasMode::kNone, Activation::kRelu}}) {
      GemmProblem p = MakeGemm(320, 264, 72, DataType::kBF16);
      p.b.layout = Layout::kColMajor;
      p.d.layout = Layout::kColMajor;
      p.epilogue.bias = e.bias;
      p.epilogue.activation = e.act;
      p = Canonicalize(p);
      Options o;
      o.backend = policy;
      auto plan = Plan::Create(p, o);
      ASSERT_TRUE(plan.ok()) << DebugString(p) << ": " << plan.status();
      if (policy != BackendPolicy::kCublasOnly) {
        EXPECT_THAT(plan->info().reason, HasSubstr("transpose")) << DebugString(p);
      }
      Buffer a, b, d, bias;
      for (auto [buf, n] : {std::pair{&a, p.m * p.k}, std::pair{&b, p.n * p.k},
                            std::pair{&d, p.m * p.n}, std::pair{&bias, std::max(p.m, p.n)}}) {
        ASSERT_EQ(buf->Allocate(n * 2, 0), cudaSuccess);
      }
      for (Buffer* x : {&a, &b, &bias}) {
        x->FillRandom(DataType::kBF16, rng_);
        CUDA_OK(x->Upload());
      }
      CUDA_OK(d.Poison());
      const void* bias_ptr = e.bias == BiasMode::kNone ? nullptr : bias.device;
      EXPECT_THAT(plan->Run({a.device, nullptr, nullptr, d.device, bias_ptr}, nullptr),
                  StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("b: null")));
      ASSERT_TRUE(plan->Run({a.device, b.device, nullptr, d.device, bias_ptr}, nullptr).ok());
      CUDA_OK(cudaDeviceSynchronize());
      CUDA_OK(d.Download());
      const auto ref = ReferenceGemm(p, a.host.data(), b.host.data(), nullptr, bias.host.data());
      EXPECT_LT(RelativeError(p, d.host.data(), ref), 1.6e-2)
          << DebugString(p) << " via " << plan->info().kernel_name;
    }
  }
}

TEST_F(ColumnMajorDTest, ASkinnyProblemStaysAsAsked) {
  GemmProblem p = MakeGemm(16, 256, 128, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  p.d.layout = Layout::kColMajor;
  auto plan = Plan::Create(Canonicalize(p), Options());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->info().reason, Not(HasSubstr("transpose")));
}

}  // namespace
}  // namespace jitgemm::support
