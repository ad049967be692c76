// The benchmark suites of BENCHMARKS.md as data: each case is one problem,
// the cuBLAS baselines measured beside it and how its weights are rotated.
//
// S1 small-M linear (bf16, y = x W^T, W rotated over 100 buffers), S2 GEMM +
// bias + activation (ReLU; SiLU and GELU-erf, which cuBLASLt cannot fuse),
// S3 grouped linear (seed 001), S6 large GEMM and mid-size linears.
//
// Thread safety: plain functions and value types.
#ifndef JITGEMM_TOOLS_BENCH_SUITES_H_
#define JITGEMM_TOOLS_BENCH_SUITES_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm::bench {

// One column of a result row.
enum class Impl {
  kCublasMm,    // cuBLASLt, plain product (no bias, no activation)
  kCublasLoop,  // cuBLASLt, one plain call per batch matrix (S3's loop of linears)
  kAddmmAct,    // cuBLASLt BIAS epilogue, then a separate activation kernel
                // (F.linear + F.relu / F.gelu / F.silu)
  kLtBiasAct,   // cuBLASLt's fused RELU_BIAS or GELU_BIAS (tanh) epilogue
  kJit,         // jitgemm Plan, BackendPolicy::kJitOnly
  kAuto,        // jitgemm Plan, BackendPolicy::kAuto (the selected plan)
};

// Every column, in report order.
inline constexpr Impl kAllImpls[] = {Impl::kCublasMm,  Impl::kCublasLoop, Impl::kAddmmAct,
                                     Impl::kLtBiasAct, Impl::kJit,        Impl::kAuto};

// "cublas_mm", "cublas_loop", "addmm_act", "lt_bias_act", "jit", "auto".
const char* ImplName(Impl impl);
// The column named `name`; also the names the first two epilogue columns had
// before activations other than ReLU ("addmm_relu", "lt_relu_bias").
std::optional<Impl> ImplFromName(std::string_view name);
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
  // The options of the jitgemm columns where the case brings its own (a
  // manifest's); otherwise the run's.
  std::optional<Options> options;
};

// True when cuBLASLt has one fused epilogue for the problem's bias and
// activation: a per-column bias with ReLU or tanh-GELU (no erf-GELU, no SiLU,
// no per-row bias, no gate).
bool LtFusesEpilogue(const GemmProblem& problem);

// The columns for any single problem: cublas_mm; addmm_act where it has a
// bias or an activation; lt_bias_act where LtFusesEpilogue; jit and auto. On
// a gated problem cublas_mm times the [gate | up] product alone, and
// addmm_act the gate and up linears then silu(gate) * up (SiLU only).
std::vector<Impl> ColumnsFor(const GemmProblem& problem);

// The options of a case's jitgemm columns (before the backend policy each
// column sets): the case's own, else `run_options`; `tuning` (--tuning)
// overrides either's policy.
Options CaseOptions(const BenchCase& bench_case, const Options& run_options,
                    std::optional<TuningPolicy> tuning);

// The cases of one suite ("S1", "S2", "S3", "S6", case-insensitive), or
// InvalidArgument naming the known suites.
absl::StatusOr<std::vector<BenchCase>> MakeSuite(std::string_view name);

// Floating-point operations and the bytes that must move once (inputs read
// once, output written once) for one call.
double Flops(const GemmProblem& problem);
double BytesMoved(const GemmProblem& problem);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_SUITES_H_
