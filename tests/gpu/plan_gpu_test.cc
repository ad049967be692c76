// Plan behaviour on a GPU: graph capture, nothing launched on bad input, the C
// ABI, chains of dependent plans with programmatic dependent launch.
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jitgemm/c_api.h"
#include "jitgemm/gemm.h"
#include "jitgemm/plan.h"
#include "support/gpu_env.h"
#include "support/reference.h"
#include "support/status_matchers.h"

namespace jitgemm::support {
namespace {

using ::testing::HasSubstr;

GemmProblem Linear(int64_t m, int64_t n, int64_t k, DataType t) {
  GemmProblem p = MakeGemm(m, n, k, t);
  p.b.layout = Layout::kColMajor;  // nn.Linear weight (N, K)
  p.epilogue.bias = BiasMode::kPerColumn;
  p.epilogue.activation = Activation::kRelu;
  return Canonicalize(p);
}

class PlanGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { JITGEMM_REQUIRE_GPU(); }

  // A (M x K), B (N x K), D (M x N) and a bias of max(M, N) elements for a
  // problem of 16-bit type t: inputs random and uploaded, D poisoned.
  cudaError_t MakeOperands(const GemmProblem& p, DataType t, Buffer& a, Buffer& b, Buffer& d,
                           Buffer& bias) {
    const std::pair<Buffer*, int64_t> sizes[] = {
        {&a, p.m * p.k}, {&b, p.n * p.k}, {&d, p.m * p.n}, {&bias, std::max(p.m, p.n)}};
    for (const auto& [buf, n] : sizes) {
      if (cudaError_t e = buf->Allocate(n * 2, 0); e != cudaSuccess) return e;
    }
    for (Buffer* x : {&a, &b, &bias}) {
      x->FillRandom(t, rng_);
      if (cudaError_t e = x->Upload(); e != cudaSuccess) return e;
    }
    return d.Poison();
  }

  void CheckChain(int64_t m, int64_t h, const Options& o, int layers,
                  const std::string& expect_kernel);

  std::mt19937_64 rng_{7};
};

// RELIABILITY item 20: a plan made before capture runs inside a graph; global
// capture mode turns any allocation or synchronisation in Run into an error.
TEST_F(PlanGpuTest, RunsInsideGlobalModeGraphCapture) {
  for (BackendPolicy backend : {BackendPolicy::kJitOnly, BackendPolicy::kCublasOnly}) {
    const GemmProblem p = Linear(48, 96, 160, DataType::kF16);
    Options o;
    o.backend = backend;
    auto plan = Plan::Create(p, o);
    ASSERT_TRUE(plan.ok()) << plan.status();
    Buffer a, b, d, bias;
    CUDA_OK(MakeOperands(p, DataType::kF16, a, b, d, bias));
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaGraph_t graph;
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(plan->Run({a.device, b.device, nullptr, d.device, bias.device}, stream).ok());
    }
    CUDA_OK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec;
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    CUDA_OK(d.Download());
    auto ref = ReferenceGemm(p, a.host.data(), b.host.data(), nullptr, bias.host.data());
    EXPECT_LT(RelativeError(p, d.host.data(), ref), 4e-3) << plan->info().kernel_name;
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
  }
}

// RELIABILITY item 20, second half: a plan created (compiled and tuned) while
// another stream of this thread captures in global mode leaves that capture
// intact; its graph replays correctly afterwards.
TEST_F(PlanGpuTest, CreatingAPlanDuringCaptureDoesNotBreakIt) {
  const GemmProblem first = Linear(40, 72, 136, DataType::kBF16);
  auto plan = Plan::Create(first);
  ASSERT_TRUE(plan.ok()) << plan.status();
  Buffer a, b, d, bias;
  CUDA_OK(MakeOperands(first, DataType::kBF16, a, b, d, bias));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  ASSERT_TRUE(plan->Run({a.device, b.device, nullptr, d.device, bias.device}, stream).ok());
  // A never-seen problem: compile, allocate, time, all while the capture runs.
  auto second = Plan::Create(Linear(24, 56, 88, DataType::kF16));
  EXPECT_TRUE(second.ok()) << second.status();
  cudaGraph_t graph;
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(d.Download());
  auto ref = ReferenceGemm(first, a.host.data(), b.host.data(), nullptr, bias.host.data());
  EXPECT_LT(RelativeError(first, d.host.data(), ref), 1.6e-2);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// A plan made while the per-thread default stream captures in global mode is
// chosen untimed (nothing may launch into the capture) and not stored. Making
// it, compile included, leaves the capture valid, and it computes the product
// afterwards; a plan of the same problem made after the capture is timed.
TEST_F(PlanGpuTest, PlanMadeWhileTheDefaultStreamCapturesIsUntimedAndCorrect) {
  // Shapes no earlier run stored a decision for in a shared cache.
  const int64_t fresh = 8 * (static_cast<int64_t>(getpid()) % 509);
  for (const GemmProblem& p : {Linear(1000, 1032 + fresh, 1048, DataType::kBF16),
                               Linear(24, 40 + fresh, 72, DataType::kBF16)}) {
    CUDA_OK(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeGlobal));
    auto plan = Plan::Create(p);
    cudaGraph_t graph;
    CUDA_OK(cudaStreamEndCapture(cudaStreamPerThread, &graph));
    CUDA_OK(cudaGraphDestroy(graph));
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_THAT(plan->info().reason, HasSubstr("stream capture"));
    EXPECT_TRUE(plan->info().candidate_us.empty()) << plan->info().reason;
    Buffer a, b, d, bias;
    CUDA_OK(MakeOperands(p, DataType::kBF16, a, b, d, bias));
    ASSERT_TRUE(plan->Run({a.device, b.device, nullptr, d.device, bias.device}, nullptr).ok());
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(d.Download());
    auto ref = ReferenceGemm(p, a.host.data(), b.host.data(), nullptr, bias.host.data());
    EXPECT_LT(RelativeError(p, d.host.data(), ref), 1.6e-2) << plan->info().kernel_name;
    auto after = Plan::Create(p);
    ASSERT_TRUE(after.ok()) << after.status();
    EXPECT_FALSE(after->info().candidate_us.empty()) << "nothing stored under capture";
  }
}

// Default options time candidates against cuBLAS and keep the faster: for a
// large problem where mma.sync cannot match cuBLAS, auto must not be slower.
TEST_F(PlanGpuTest, AutoPlanRecordsItsMeasuredChoice) {
  auto plan = Plan::Create(Linear(2048, 2048, 2048, DataType::kF16));
  ASSERT_TRUE(plan.ok()) << plan.status();
  const PlanInfo& info = plan->info();
  ASSERT_FALSE(info.candidate_us.empty()) << info.reason;
  double cublas = -1, chosen = -1, best = 1e30;
  for (const auto& [name, us] : info.candidate_us) {
    if (name == "cublas") cublas = us;
    best = std::min(best, us);
  }
  ASSERT_GT(cublas, 0);
  chosen = info.backend == "cublas" ? cublas : best;
  EXPECT_LE(chosen, cublas * 1.0001) << info.reason;
  std::printf("auto 2048^3 f16: %s (%s)\n", info.kernel_name.c_str(), info.reason.c_str());
}

// Epilogues cuBLASLt lacks run as cuBLAS + one JIT elementwise pass.
TEST_F(PlanGpuTest, CublasWithElementwisePassIsCorrect) {
  struct Epi {
    BiasMode bias;
    Activation act;
    Layout d_layout;
  };
  for (const Epi& e : {Epi{BiasMode::kPerColumn, Activation::kGeluErf, Layout::kRowMajor},
                       Epi{BiasMode::kPerRow, Activation::kSilu, Layout::kRowMajor},
                       Epi{BiasMode::kPerColumn, Activation::kSilu, Layout::kColMajor},
                       Epi{BiasMode::kNone, Activation::kGeluErf, Layout::kRowMajor}}) {
    GemmProblem p = MakeGemm(96, 160, 72, DataType::kBF16);
    p.b.layout = Layout::kColMajor;
    p.d.layout = e.d_layout;
    p.epilogue.bias = e.bias;
    p.epilogue.activation = e.act;
    p = Canonicalize(p);
    Options o;
    o.backend = BackendPolicy::kCublasOnly;
    auto plan = Plan::Create(p, o);
    ASSERT_TRUE(plan.ok()) << DebugString(p) << ": " << plan.status();
    Buffer a, b, d, bias;
    CUDA_OK(MakeOperands(p, DataType::kBF16, a, b, d, bias));
    ASSERT_TRUE(plan->Run({a.device, b.device, nullptr, d.device,
                           e.bias == BiasMode::kNone ? nullptr : bias.device},
                          nullptr)
                    .ok());
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(d.Download());
    auto ref = ReferenceGemm(p, a.host.data(), b.host.data(), nullptr, bias.host.data());
    EXPECT_LT(RelativeError(p, d.host.data(), ref), 1.6e-2)
        << DebugString(p) << " via " << plan->info().kernel_name;
  }
}

// RELIABILITY item 16: invalid input returns InvalidArgument and launches nothing.
TEST_F(PlanGpuTest, BadPointersLaunchNothing) {
  const GemmProblem p = Linear(16, 64, 64, DataType::kBF16);
  Options o;
  o.backend = BackendPolicy::kJitOnly;
  auto plan = Plan::Create(p, o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  Buffer a, b, d, bias;
  ASSERT_EQ(a.Allocate(16 * 64 * 2, 0), cudaSuccess);
  ASSERT_EQ(b.Allocate(64 * 64 * 2, 0), cudaSuccess);
  ASSERT_EQ(d.Allocate(16 * 64 * 2, 0), cudaSuccess);
  ASSERT_EQ(bias.Allocate(64 * 2, 2), cudaSuccess);  // misaligned on purpose
  CUDA_OK(d.Poison());
  EXPECT_THAT(plan->Run({a.device, nullptr, nullptr, d.device, bias.device}, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("b: null")));
  EXPECT_THAT(plan->Run({a.device, b.device, nullptr, d.device, bias.device}, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bias: pointer")));
  Buffer aligned_bias;
  ASSERT_EQ(aligned_bias.Allocate(64 * 2, 0), cudaSuccess);
  EXPECT_THAT(plan->Run({a.device, b.device, nullptr, a.device, aligned_bias.device}, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overlaps input a")));
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(d.Download());
  for (uint8_t byte : d.host) ASSERT_EQ(byte, 0xff) << "something wrote D";
}

TEST_F(PlanGpuTest, CApiRunsAndReportsErrors) {
  jitgemm_problem_t problem;
  jitgemm_problem_init(&problem, 32, 64, 48, /*f32=*/0);
  problem.a.ld = 10;  // smaller than K
  jitgemm_plan_t plan = nullptr;
  EXPECT_EQ(jitgemm_plan_create(&problem, &plan), JITGEMM_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  EXPECT_THAT(jitgemm_last_error(), HasSubstr("lda"));
  problem.a.ld = 0;
  ASSERT_EQ(jitgemm_plan_create(&problem, &plan), JITGEMM_OK) << jitgemm_last_error();
  Buffer a, b, d;
  ASSERT_EQ(a.Allocate(32 * 48 * 4, 0), cudaSuccess);
  ASSERT_EQ(b.Allocate(48 * 64 * 4, 0), cudaSuccess);
  ASSERT_EQ(d.Allocate(32 * 64 * 4, 0), cudaSuccess);
  a.FillRandom(DataType::kF32, rng_);
  b.FillRandom(DataType::kF32, rng_);
  CUDA_OK(a.Upload());
  CUDA_OK(b.Upload());
  CUDA_OK(d.Poison());
  EXPECT_EQ(jitgemm_plan_run(plan, a.device, b.device, nullptr, d.device, nullptr, nullptr),
            JITGEMM_OK);
  EXPECT_EQ(jitgemm_plan_run(plan, nullptr, b.device, nullptr, d.device, nullptr, nullptr),
            JITGEMM_INVALID_ARGUMENT);
  EXPECT_THAT(jitgemm_last_error(), HasSubstr("a: null"));
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(d.Download());
  GemmProblem p = Canonicalize(MakeGemm(32, 64, 48, DataType::kF32));
  auto ref = ReferenceGemm(p, a.host.data(), b.host.data(), nullptr, nullptr);
  EXPECT_LT(RelativeError(p, d.host.data(), ref), 2e-5);
  jitgemm_plan_destroy(plan);
}

// `layers` dependent h x h linears at M rows in one graph, replayed three
// times: each layer reads the activations the previous one writes, so a
// kernel that read them before griddepcontrol.wait would see stale data.
// Every layer is checked against a float64 reference computed from the
// device's own (rounded) input activations.
void PlanGpuTest::CheckChain(int64_t m, int64_t h, const Options& o, int layers,
                             const std::string& expect_kernel) {
  const GemmProblem p = Linear(m, h, h, DataType::kBF16);
  auto plan = Plan::Create(p, o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  if (!expect_kernel.empty()) {
    EXPECT_THAT(plan->info().kernel_name, HasSubstr(expect_kernel)) << "m=" << m;
  }
  std::vector<std::unique_ptr<Buffer>> acts, weights, biases;
  for (int l = 0; l <= layers; ++l) {
    acts.push_back(std::make_unique<Buffer>());
    ASSERT_EQ(acts.back()->Allocate(m * h * 2, 0), cudaSuccess);
  }
  // Keep activations O(1) through ReLU layers: weights scaled by 1/sqrt(h).
  const float scale = 1.0f / std::sqrt(static_cast<float>(h));
  for (int l = 0; l < layers; ++l) {
    weights.push_back(std::make_unique<Buffer>());
    biases.push_back(std::make_unique<Buffer>());
    ASSERT_EQ(weights.back()->Allocate(h * h * 2, 0), cudaSuccess);
    ASSERT_EQ(biases.back()->Allocate(h * 2, 0), cudaSuccess);
    weights.back()->FillRandom(DataType::kBF16, rng_);
    for (size_t i = 0; i < weights.back()->host.size() / 2; ++i) {
      const float w = LoadAs(DataType::kBF16, weights.back()->host.data(), i) * scale;
      StoreAs(DataType::kBF16, weights.back()->host.data(), i, w);
    }
    biases.back()->FillRandom(DataType::kBF16, rng_);
    CUDA_OK(weights.back()->Upload());
    CUDA_OK(biases.back()->Upload());
  }
  acts[0]->FillRandom(DataType::kBF16, rng_);
  CUDA_OK(acts[0]->Upload());
  for (int l = 1; l <= layers; ++l) CUDA_OK(acts[l]->Poison());
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int l = 0; l < layers; ++l) {
    ASSERT_TRUE(plan->Run({acts[l]->device, weights[l]->device, nullptr, acts[l + 1]->device,
                           biases[l]->device},
                          stream)
                    .ok());
  }
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int rep = 0; rep < 3; ++rep) CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  for (int l = 0; l < layers; ++l) {
    CUDA_OK(acts[l + 1]->Download());
    auto ref = ReferenceGemm(p, acts[l]->host.data(), weights[l]->host.data(), nullptr,
                             biases[l]->host.data());
    EXPECT_LT(RelativeError(p, acts[l + 1]->host.data(), ref), 1.6e-2)
        << "layer " << l << " m=" << m << " pdl=" << o.pdl << " " << plan->info().kernel_name;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// Eight dependent small-M linears with PDL on and off, and with the early
// weight reads of constant_b (M = 1 and 2 take the early kernel in heuristic
// mode).
TEST_F(PlanGpuTest, DependentChainWithPdlIsCorrect) {
  struct Mode {
    int64_t m;
    bool pdl, constant_b;
  };
  for (const Mode mode : {Mode{4, true, false}, Mode{4, false, false}, Mode{1, true, true},
                          Mode{2, true, true}, Mode{5, true, true}}) {
    Options o;
    o.backend = BackendPolicy::kJitOnly;
    o.tuning = TuningPolicy::kHeuristic;
    o.pdl = mode.pdl;
    o.constant_b = mode.constant_b;
    CheckChain(mode.m, 512, o, 8, mode.constant_b && mode.m <= 2 ? "_earlyb" : "");
  }
}

// The kernels a decode-sized layer (2048 x 2048) gets under constant_b, each
// in a dependent chain: x by bulk copy in two pieces (M <= 8), CTA pairs along
// K reducing in a cluster (M = 9..16), and above M = 16 the two-tiles-a-warp
// kernel without early reads.
TEST_F(PlanGpuTest, DecodeShapeKernelsInADependentChainAreCorrect) {
  int major = 0;
  CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  if (major < 9) GTEST_SKIP() << "the early-weight kernels need sm_90 (PDL, clusters)";
  const std::pair<int64_t, std::string> cases[] = {
      {1, "_earlyb_xc1"}, {3, "_earlyb_xc1"}, {8, "_earlyb_xc1"}, {12, "_ck"},
      {16, "_ck"},        {24, "32x32x32"},   {32, "32x32x32"}};
  for (const auto& [m, kernel] : cases) {
    Options o;
    o.backend = BackendPolicy::kJitOnly;
    o.tuning = TuningPolicy::kHeuristic;
    o.constant_b = true;
    CheckChain(m, 2048, o, 4, kernel);
  }
}

TEST_F(PlanGpuTest, OneCallGemmReusesItsPlan) {
  const GemmProblem p = Linear(8, 32, 40, DataType::kF16);
  Buffer a, b, d, bias;
  ASSERT_EQ(a.Allocate(8 * 40 * 2, 0), cudaSuccess);
  ASSERT_EQ(b.Allocate(32 * 40 * 2, 0), cudaSuccess);
  ASSERT_EQ(d.Allocate(8 * 32 * 2, 0), cudaSuccess);
  ASSERT_EQ(bias.Allocate(32 * 2, 0), cudaSuccess);
  for (Buffer* x : {&a, &b, &bias}) {
    x->FillRandom(DataType::kF16, rng_);
    CUDA_OK(x->Upload());
  }
  for (int i = 0; i < 3; ++i) {
    CUDA_OK(d.Poison());
    ASSERT_TRUE(Gemm(p, {a.device, b.device, nullptr, d.device, bias.device}, nullptr).ok());
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(d.Download());
    auto ref = ReferenceGemm(p, a.host.data(), b.host.data(), nullptr, bias.host.data());
    EXPECT_LT(RelativeError(p, d.host.data(), ref), 4e-3);
  }
}

}  // namespace
}  // namespace jitgemm::support
