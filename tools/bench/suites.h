// The benchmark suites of BENCHMARKS.md as data: each case is one problem,
// the cuBLAS baselines measured beside it and how its weights are rotated.
//
// S1 small-M linear (bf16, y = x W^T, W rotated over 100 buffers), S2 GEMM +
// bias + ReLU, S3 grouped linear (seed 001), S6 large GEMM.
//
// Thread safety: plain functions and value types.
#ifndef JITGEMM_TOOLS_BENCH_SUITES_H_
#define JITGEMM_TOOLS_BENCH_SUITES_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "jitgemm/problem.h"

namespace jitgemm::bench {

// One column of a result row.
enum class Impl {
  kCublasMm,        // cuBLASLt, plain product (no bias, no activation)
  kCublasLoop,      // cuBLASLt, one plain call per batch matrix (S3's loop of linears)
  kAddmmRelu,       // cuBLASLt BIAS epilogue, then a separate ReLU kernel
  kCublasReluBias,  // cuBLASLt RELU_BIAS epilogue, one call
  kJit,             // jitgemm Plan, BackendPolicy::kJitOnly
  kAuto,            // jitgemm Plan, BackendPolicy::kAuto (the selected plan)
};

// "cublas_mm", "cublas_loop", "addmm_relu", "lt_relu_bias", "jit", "auto".
const char* ImplName(Impl impl);
bool IsBaseline(Impl impl);
// True when the column computes the problem's whole epilogue; false when
// only alpha * A B + beta * C (the plain cuBLAS columns).
bool ComputesEpilogue(Impl impl, const GemmProblem& problem);

struct BenchCase {
  std::string suite;    // "S1"
  std::string label;    // "bf16 M=8 N=2048 K=4096"
  GemmProblem problem;  // canonical
  // Distinct copies of B (the weights) that consecutive calls rotate through
  // so that they miss L2 the way the real workload does; 1: no rotation.
  int rotate = 1;
  // Report TB/s (bytes that must move) instead of TFLOP/s.
  bool memory_bound = false;
  std::vector<Impl> impls;  // baselines first, then kJit and kAuto
};

// The cases of one suite ("S1", "S2", "S3", "S6", case-insensitive), or
// InvalidArgument naming the known suites.
absl::StatusOr<std::vector<BenchCase>> MakeSuite(std::string_view name);

// Floating-point operations and the bytes that must move once (inputs read
// once, output written once) for one call.
double Flops(const GemmProblem& problem);
double BytesMoved(const GemmProblem& problem);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_SUITES_H_
