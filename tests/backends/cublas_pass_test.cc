// The cuBLASLt backend's seams on a GPU: the elementwise pass after the plain
// product (and Lt's bias before an activation-only pass), the gated product
// into the workspace then the gate pass, and runs on several streams and
// inside graph capture. Without a CUDA device these tests skip.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cublas_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/gpu_env.h"
#include "tests/backends/cublas_case.h"

namespace jitgemm {
namespace {

using cublas_test::Case;
using cublas_test::Problem;
using cublas_test::Tolerance;
using ::testing::HasSubstr;

// Records what it was made for; does nothing when run.
class RecordingPass : public ElementwiseEpilogue {
 public:
  explicit RecordingPass(int* runs) : runs_(runs) {}
  absl::Status Run(const void* product, void* d, const void* bias, CUstream stream) const override {
    ++*runs_;
    return absl::OkStatus();
  }
  std::string Describe() const override { return "recording pass"; }

 private:
  int* runs_;
};

TEST(CublasBackendTest, ElementwisePassFollowsThePlainProduct) {
  JITGEMM_REQUIRE_GPU();
  const GemmProblem p =
      Problem(16, 32, 64, DataType::kF16, DataType::kF16, Layout::kRowMajor, Layout::kColMajor,
              Layout::kRowMajor, BiasMode::kPerRow, Activation::kSilu);
  int made = 0, runs = 0;
  GemmProblem seen;
  ElementwiseEpilogueFactory factory =
      [&](const GemmProblem& problem,
          const Options&) -> absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> {
    ++made;
    seen = problem;
    return std::make_unique<RecordingPass>(&runs);
  };
  auto backend = CreateCublasBackend(p, Options(), factory);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ(made, 1);
  EXPECT_EQ(seen.epilogue.activation, Activation::kSilu);
  EXPECT_THAT((*backend)->Describe(), HasSubstr("recording pass"));
  Case c(p);
  ASSERT_TRUE((*backend)->Run(c.pointers(), nullptr).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(runs, 1);
  // The Lt call alone wrote the plain product.
  EXPECT_LT(c.Error(c.Reference(false)), 2e-3);
}

// A bias on Lt's axis stays with Lt's BIAS epilogue when the activation needs
// the pass: the pass is made for the activation alone.
TEST(CublasBackendTest, LtAddsTheBiasBeforeAnActivationOnlyPass) {
  JITGEMM_REQUIRE_GPU();
  const GemmProblem p =
      Problem(16, 32, 64, DataType::kBF16, DataType::kBF16, Layout::kRowMajor, Layout::kColMajor,
              Layout::kRowMajor, BiasMode::kPerColumn, Activation::kSilu);
  int runs = 0;
  GemmProblem seen;
  ElementwiseEpilogueFactory factory =
      [&](const GemmProblem& problem,
          const Options&) -> absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> {
    seen = problem;
    return std::make_unique<RecordingPass>(&runs);
  };
  auto backend = CreateCublasBackend(p, Options(), factory);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ(seen.epilogue.bias, BiasMode::kNone);
  EXPECT_EQ(seen.epilogue.activation, Activation::kSilu);
  EXPECT_THAT((*backend)->Describe(), HasSubstr("cublasLt BIAS"));
  // Same operands, no activation: what the Lt call alone must leave in D.
  GemmProblem biased = p;
  biased.epilogue.activation = Activation::kNone;
  Case c(biased);
  ASSERT_TRUE((*backend)->Run(c.pointers(), nullptr).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(runs, 1);
  EXPECT_LT(c.Error(c.Reference(true)), Tolerance(DataType::kBF16, false));
}

// A gated problem (B = [gate | up] of 2N columns): 16 x 24 from K = 64, bf16,
// SwiGLU with a per-column bias of 2N entries.
GemmProblem GatedProblem() {
  GemmProblem p =
      Problem(16, 24, 64, DataType::kBF16, DataType::kBF16, Layout::kRowMajor, Layout::kColMajor,
              Layout::kRowMajor, BiasMode::kPerColumn, Activation::kSilu);
  p.epilogue.gate = Gate::kHalves;
  p.b.ld = 64;
  return p;
}

TEST(CublasBackendTest, GatedProblemsAreUnimplementedWithoutAFactory) {
  JITGEMM_REQUIRE_GPU();
  auto backend = CreateCublasBackend(GatedProblem(), Options());
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(backend.status().message()), HasSubstr("gate pass"));
}

// Records where it was asked to read and write.
class GateRecordingPass : public ElementwiseEpilogue {
 public:
  explicit GateRecordingPass(GemmPointers* seen) : seen_(seen) {}
  absl::Status Run(const void* product, void* d, const void* bias, CUstream stream) const override {
    seen_->c = product;
    seen_->d = d;
    seen_->bias = bias;
    return absl::OkStatus();
  }
  std::string Describe() const override { return "gate recording pass"; }

 private:
  GemmPointers* seen_;
};

// Lt writes all 2N columns (with the bias: row-major D puts it on Lt's axis)
// into the backend's workspace, never into D; the pass reads the workspace
// and writes D.
TEST(CublasBackendTest, GatedProductGoesToTheWorkspaceThenThePass) {
  JITGEMM_REQUIRE_GPU();
  const GemmProblem p = GatedProblem();
  GemmProblem made_for;
  GemmPointers seen;
  ElementwiseEpilogueFactory factory =
      [&](const GemmProblem& problem,
          const Options&) -> absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> {
    made_for = problem;
    return std::make_unique<GateRecordingPass>(&seen);
  };
  auto backend = CreateCublasBackend(p, Options(), factory);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ(made_for.epilogue.gate, Gate::kHalves);
  EXPECT_EQ(made_for.epilogue.activation, Activation::kSilu);
  EXPECT_EQ(made_for.epilogue.bias, BiasMode::kNone) << "Lt's BIAS epilogue adds it";
  const std::string name = (*backend)->Describe();
  EXPECT_THAT(name, HasSubstr("cublasLt BIAS"));
  EXPECT_THAT(name, HasSubstr("m=48"));                            // Lt's rows: all 2N columns of B
  EXPECT_THAT(name, HasSubstr("gated: [gate | up] into 1536 B"));  // 16 x 48 bf16
  EXPECT_THAT(name, HasSubstr("gate recording pass"));
  // Operands sized for B of 2N columns.
  GemmProblem wide = p;
  wide.epilogue.gate = Gate::kNone;
  wide.n = 48;
  wide.d.ld = 48;
  wide.c = wide.d;
  Case c(wide);
  const GemmPointers ptrs = c.pointers();
  ASSERT_TRUE((*backend)->Run(ptrs, nullptr).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_NE(seen.c, nullptr);
  EXPECT_NE(seen.c, ptrs.d);
  EXPECT_EQ(seen.d, ptrs.d);
  EXPECT_EQ(seen.bias, ptrs.bias);
  // D was left alone: the Lt call wrote the workspace.
  EXPECT_EQ(c.Error(c.Initial()), 0.0);
}

TEST(CublasBackendTest, RunsOnSeveralStreamsAndInsideGraphCapture) {
  JITGEMM_REQUIRE_GPU();
  const GemmProblem p =
      Problem(8, 4096, 4096, DataType::kBF16, DataType::kBF16, Layout::kRowMajor, Layout::kColMajor,
              Layout::kRowMajor, BiasMode::kPerColumn, Activation::kRelu);
  auto backend = CreateCublasBackend(p, Options());
  ASSERT_TRUE(backend.ok()) << backend.status();
  Case c(p);
  const std::vector<double> want = c.Reference(true);
  cudaStream_t s1, s2;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  for (cudaStream_t s : {s1, s2, s1}) {
    ASSERT_EQ(cudaMemset(c.pointers().d, 0xff, 8 * 4096 * 2), cudaSuccess);  // NaN
    ASSERT_TRUE((*backend)->Run(c.pointers(), s).ok());
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_LT(c.Error(want), 1e-2);
  }
  ASSERT_EQ(cudaMemset(c.pointers().d, 0xff, 8 * 4096 * 2), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s2, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const absl::Status run = (*backend)->Run(c.pointers(), s2);
  ASSERT_EQ(cudaStreamEndCapture(s2, &graph), cudaSuccess);
  ASSERT_TRUE(run.ok()) << run;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s2), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s2), cudaSuccess);
  EXPECT_LT(c.Error(want), 1e-2);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

}  // namespace
}  // namespace jitgemm
