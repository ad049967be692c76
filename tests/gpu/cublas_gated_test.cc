// The cuBLAS route of gated problems (SwiGLU, GeGLU): one cuBLASLt product
// of A with all 2N columns of B into the plan's [gate | up] workspace, then
// the JIT gate pass writing D, against the float64 reference with D
// poisoned with NaN first. Random problems: f16 / bf16 / f32 inputs, f16 /
// bf16 / f32 D, every activation, no bias or a per-column bias of 2N
// (added by Lt or by the pass), odd N, padded leading dimensions, both
// layouts of every operand, strided batches (A or B broadcast) and seed
// 001's grouped (B, G, D) layout, 16-byte, narrower and scalar passes,
// cuBLASLt's first and later heuristic suggestions. Then: the plan inside a
// CUDA graph, and a bad pointer that launches nothing.
#include <cuda_runtime.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cublas_backend.h"
#include "backends/elementwise_epilogue.h"
#include "gtest/gtest.h"
#include "jitgemm/plan.h"
#include "support/gpu_env.h"
#include "tests/gpu/gpu_case.h"

namespace jitgemm::support {
namespace {

constexpr Activation kActivations[] = {Activation::kNone, Activation::kRelu, Activation::kGeluTanh,
                                       Activation::kGeluErf, Activation::kSilu};

Case GatedCase(std::mt19937_64& rng, int index) {
  Case c;
  GemmProblem& p = c.problem;
  const DataType in = index % 3 == 0   ? DataType::kF16
                      : index % 3 == 1 ? DataType::kBF16
                                       : DataType::kF32;
  p.m = Pick<int64_t>(rng, {1, 2, 7, 16, 33, 64, 65, 127, 200, 257});
  // Odd N half of the time: a misaligned up half, tails in every line.
  p.n = Pick<int64_t>(rng, {1, 3, 17, 31, 129, 255, 8, 64, 96, 256});
  p.k = Pick<int64_t>(rng, {1, 8, 33, 64, 200, 511, 1024});
  p.a.type = p.b.type = in;
  p.d.type = in == DataType::kF32 || index % 4 != 3 ? in : DataType::kF32;
  p.a.layout = Pick(rng, {Layout::kRowMajor, Layout::kColMajor});
  p.b.layout = Pick(rng, {Layout::kRowMajor, Layout::kColMajor});
  p.d.layout = Pick(rng, {Layout::kRowMajor, Layout::kRowMajor, Layout::kColMajor});
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.activation = kActivations[index % 5];
  p.epilogue.bias = Pick(rng, {BiasMode::kNone, BiasMode::kPerColumn});
  p.epilogue.alpha = Pick(rng, {1.f, 1.f, 0.5f, -1.25f});
  DrawGatedStrides(rng, index, {0, 0, 0, 1, 8}, p);
  c.options.backend = BackendPolicy::kCublasOnly;
  if (index % 9 == 4) {  // pointers only element-aligned: the scalar pass
    c.options.pointer_alignment =
        DataTypeSize(in) < DataTypeSize(p.d.type) ? DataTypeSize(in) : DataTypeSize(p.d.type);
    c.misalign = true;
  }
  p = Canonicalize(p);
  c.tag = absl::StrCat("#", index);
  return c;
}

// The part of a cuBLAS plan's name after " + ": the pass.
std::string PassName(const std::string& kernel_name) {
  const size_t at = kernel_name.find(" + ");
  return at == std::string::npos ? "" : kernel_name.substr(at + 3);
}

// No GPU needed: the generator makes valid problems and covers what the
// header promises.
TEST(CublasGatedTest, GeneratorCoversTheCases) {
  std::mt19937_64 rng(20261125);
  std::map<std::string, int> seen;
  for (int i = 0; i < 150; ++i) {
    const Case c = GatedCase(rng, i);
    const GemmProblem& p = c.problem;
    ASSERT_TRUE(ValidateProblem(p).ok()) << c.tag << ": " << ValidateProblem(p);
    seen[ActivationName(p.epilogue.activation)]++;
    seen[absl::StrCat("d ", DataTypeName(p.d.type))]++;
    seen[absl::StrCat("in ", DataTypeName(p.a.type))]++;
    if (p.n % 2 == 1) seen["odd n"]++;
    if (p.batch_count > 1) seen["batched"]++;
    if (p.batch_count > 1 && p.a.ld == p.batch_count * p.k) seen["grouped"]++;
    if (p.epilogue.bias == BiasMode::kPerColumn) seen["bias"]++;
    if (p.d.layout == Layout::kColMajor) seen["col-major d"]++;
    if (c.misalign) seen["misaligned"]++;
  }
  for (const char* what :
       {"none", "relu", "gelu_tanh", "gelu_erf", "silu", "d f16", "d bf16", "d f32", "in f32",
        "odd n", "batched", "grouped", "bias", "col-major d", "misaligned"}) {
    EXPECT_GT(seen[what], 0) << what;
  }
}

TEST(CublasGatedTest, RandomProblemsMatchFloat64Reference) {
  JITGEMM_REQUIRE_GPU();
  const int count = EnvInt("JITGEMM_GATED_PROBLEMS", 150);
  std::mt19937_64 rng(EnvInt("JITGEMM_TEST_SEED", 20261125));
  int failures = 0, later_algorithms = 0, lt_bias = 0, pass_bias = 0;
  std::map<std::string, int> widths;
  for (int i = 0; i < count; ++i) {
    const Case c = GatedCase(rng, i);
    ASSERT_TRUE(ValidateProblem(c.problem).ok()) << c.tag << ": " << ValidateProblem(c.problem);
    std::string name, err;
    if (i % 3 == 2) {
      // The tuner's k-th cuBLAS candidate: CublasAlgorithm{k} builds this.
      const int algorithm = 1 + i % 2;
      auto backend =
          CreateCublasBackend(c.problem, c.options, MakeJitElementwiseEpilogue, algorithm);
      if (absl::IsNotFound(backend.status())) {
        backend = CreateCublasBackend(c.problem, c.options, MakeJitElementwiseEpilogue, 0);
      } else {
        ++later_algorithms;
      }
      if (!backend.ok()) {
        ADD_FAILURE() << c.tag << " " << DebugString(c.problem) << ": " << backend.status();
        ++failures;
        continue;
      }
      name = (*backend)->Describe();
      err = RunCase(
          c, c.problem, [&](const GemmPointers& ptrs) { return (*backend)->Run(ptrs, nullptr); },
          rng);
    } else {
      auto plan = Plan::Create(c.problem, c.options);
      if (!plan.ok()) {
        ADD_FAILURE() << c.tag << " " << DebugString(c.problem) << ": " << plan.status();
        ++failures;
        continue;
      }
      name = plan->info().kernel_name;
      err = RunCase(c, *plan, rng);
    }
    // The route says it gates, and the pass is the gate kernel.
    const std::string pass = PassName(name);
    EXPECT_NE(name.find("gated: [gate | up]"), std::string::npos) << c.tag << " " << name;
    EXPECT_NE(pass.find("gemm_gate_"), std::string::npos) << c.tag << " " << name;
    if (c.problem.epilogue.bias != BiasMode::kNone) {
      if (pass.find("_bias_col") != std::string::npos) {
        ++pass_bias;
      } else {
        EXPECT_NE(name.find("cublasLt BIAS"), std::string::npos) << c.tag << " " << name;
        ++lt_bias;
      }
    }
    for (const char* w : {"_1x1x1_", "_1x2x1_", "_1x4x1_", "_1x8x1_"}) {
      if (pass.find(w) != std::string::npos) widths[w]++;
    }
    if (!err.empty()) {
      ++failures;
      if (!ReportCaseFailure(c, c.problem, name, err)) return;
    }
  }
  std::printf(
      "cublas gated: %d problems, %d failed; later Lt suggestions %d; bias by Lt %d, by "
      "the pass %d; pass widths:",
      count, failures, later_algorithms, lt_bias, pass_bias);
  for (const auto& [w, n] : widths) std::printf(" %s=%d", w.c_str(), n);
  std::printf("\n");
  EXPECT_EQ(failures, 0);
  EXPECT_GT(lt_bias, 0);
  EXPECT_GT(pass_bias, 0);
  EXPECT_GT(widths["_1x8x1_"], 0);
  EXPECT_GT(widths["_1x1x1_"], 0);
}

// Seed 001's layout, small: x (64, 3, 128) -> h (64, 3, 96), SwiGLU with a
// bias per group.
Case SmallGroupedSwiglu() {
  Case c;
  GemmProblem& p = c.problem;
  p.m = 64;
  p.n = 96;
  p.k = 128;
  p.batch_count = 3;
  p.a = {DataType::kBF16, Layout::kRowMajor, 3 * 128, 128};
  p.b = {DataType::kBF16, Layout::kRowMajor, 192, 128 * 192};
  p.d = {DataType::kBF16, Layout::kRowMajor, 3 * 96, 96};
  p.c = p.d;
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.activation = Activation::kSilu;
  p.epilogue.bias = BiasMode::kPerColumn;
  p.epilogue.bias_batch_stride = 192;
  c.options.backend = BackendPolicy::kCublasOnly;
  c.problem = Canonicalize(p);
  c.tag = "grouped swiglu";
  return c;
}

// Run is allocation-free and capturable: the Lt call and the gate pass are
// captured into a graph and the replay computes D.
TEST(CublasGatedTest, RunsInsideGraphCapture) {
  JITGEMM_REQUIRE_GPU();
  const Case c = SmallGroupedSwiglu();
  auto plan = Plan::Create(c.problem, c.options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::mt19937_64 rng(7);
  const std::string err = RunCase(
      c, c.problem,
      [&](const GemmPointers& ptrs) -> absl::Status {
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
          return absl::InternalError("cudaStreamBeginCapture");
        }
        const absl::Status run = plan->Run(ptrs, stream);
        if (cudaStreamEndCapture(stream, &graph) != cudaSuccess) {
          return absl::InternalError("cudaStreamEndCapture: the run broke the capture");
        }
        if (!run.ok()) return run;
        if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
          return absl::InternalError("cudaGraphInstantiate");
        }
        const cudaError_t launched = cudaGraphLaunch(exec, stream);
        cudaStreamSynchronize(stream);
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
        if (launched != cudaSuccess) return absl::InternalError("cudaGraphLaunch");
        return absl::OkStatus();
      },
      rng);
  cudaStreamDestroy(stream);
  EXPECT_EQ(err, "") << plan->info().kernel_name;
}

// A missing bias pointer is InvalidArgument naming it, and neither the Lt
// call nor the gate pass runs: D keeps its poison.
TEST(CublasGatedTest, BadPointersLaunchNothing) {
  JITGEMM_REQUIRE_GPU();
  const Case c = SmallGroupedSwiglu();
  const GemmProblem& p = c.problem;
  auto plan = Plan::Create(p, c.options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  Buffer a, b, d;
  ASSERT_EQ(a.Allocate(OperandSpanBytes(p.a, p.m, p.k, p.batch_count), 0), cudaSuccess);
  ASSERT_EQ(b.Allocate(OperandSpanBytes(p.b, p.k, BColumns(p), p.batch_count), 0), cudaSuccess);
  ASSERT_EQ(d.Allocate(OperandSpanBytes(p.d, p.m, p.n, p.batch_count), 0), cudaSuccess);
  ASSERT_EQ(d.Poison(), cudaSuccess);
  const absl::Status s = plan->Run({a.device, b.device, nullptr, d.device, nullptr}, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(std::string(s.message()).find("bias"), std::string::npos) << s;
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_EQ(d.Download(), cudaSuccess);
  for (size_t i = 0; i < d.bytes; ++i) ASSERT_EQ(d.host[i], 0xff) << "byte " << i << " of D";
}

}  // namespace
}  // namespace jitgemm::support
