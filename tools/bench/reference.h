// The float64 CPU reference jitgemm-bench checks every output against, and
// the relative Frobenius error it reports.
//
// The product runs blocked over all CPU cores (a few seconds for 8192^3 on a
// 16-core host); the epilogue is applied per element while comparing, so one
// product serves both the plain-GEMM baselines and the fused columns.
//
// Thread safety: plain functions; ReferenceProduct starts its own threads.
#ifndef JITGEMM_TOOLS_BENCH_REFERENCE_H_
#define JITGEMM_TOOLS_BENCH_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "jitgemm/problem.h"

namespace jitgemm::bench {

// acc[(b * m + i) * n + j] = sum_k A[b](i, k) * B[b](k, j) in float64, with A
// and B given as host values laid out as the problem's operands describe;
// n is BColumns (2N for a gated problem: the gate and up products).
// `threads` <= 0 uses every core.
std::vector<double> ReferenceProduct(const GemmProblem& problem, const float* a, const float* b,
                                     int threads = 0);

// act(x) in float64 for the problem's activations.
double ApplyActivation(Activation act, double x);

// Relative Frobenius error ||D - ref||_F / ||ref||_F of the M x N elements of
// each batch of `d` (the decoded D buffer, indexed by the problem's d
// operand) against
//   ref = alpha * acc + beta * C                        (with_epilogue false)
//   ref = act(alpha * acc + beta * C + bias)            (with_epilogue true)
//   ref = act(alpha * acc + bias) * (alpha * acc' + bias')  (gated, with_epilogue true)
// where acc' and bias' are column N + j's: the up half.
// `c` is read only when beta != 0 and `bias` only with a bias. Any NaN or
// infinity in D gives +infinity.
double RelativeError(const GemmProblem& problem, const std::vector<double>& acc, const float* c,
                     const float* bias, const float* d, bool with_epilogue);

// The largest relative Frobenius error accepted for an output of `type`:
// a few times the rounding error of the output type for uniform [-1, 1)
// inputs, far below what a wrong tile, a lost bias or activation gives.
double Tolerance(DataType type, bool tf32);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_REFERENCE_H_
