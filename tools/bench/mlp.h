// The MLP suite (issue 16): SwiGLU MLP blocks, h = silu(x W_gate) * (x W_up),
// y = h W_down, in bf16, as jitgemm serves them (a gated plan reading one
// [W_gate | W_up] B and writing h once, then the down plan) against cuBLAS
// doing what frameworks do (gate GEMM, up GEMM, one vectorised silu*mul
// pass, down GEMM):
//
//   seed 001's grouped MLP: x (2560, 12, 1024) -> (.., 3072) -> (.., 1024), per
//     group weights used as x @ W, every GEMM strided-batched over the groups
//     in the (B, G, D) layout (no copies on either side);
//   a dense Llama-style block, 4096 -> 14336 -> 4096, M = 16, 128 and 2048
//     tokens, nn.Linear weights (torch.cat([W_gate, W_up]) for jitgemm).
//
// Columns: the cuBLAS baseline, jitgemm with the bench's plan options
// (backend auto: the tuner picks per plan), and for reference jitgemm held to
// its cuBLAS route and to its JIT kernels. Every column is checked first
// (outputs poisoned with NaN, sampled rows of h and y against float64 on the
// host) and a wrong column is never timed; then one MLP per call, graphs of
// `timing.launches` calls replayed in turn, the median reported. The plans'
// Describe() lines say which backend served each.
//
// Thread safety: one call at a time (it uses the context's stream).
#ifndef JITGEMM_TOOLS_BENCH_MLP_H_
#define JITGEMM_TOOLS_BENCH_MLP_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"
#include "tools/bench/context.h"
#include "tools/bench/graph_timer.h"

namespace jitgemm::bench {

// One MLP block: `rows` tokens (per group), `groups` > 1 for seed 001's
// grouped layout, model -> hidden -> model.
struct MlpShape {
  std::string label;
  int64_t rows = 0;
  int64_t groups = 1;
  int64_t model = 0;
  int64_t hidden = 0;
};

// Seed 001's grouped MLP, then the dense block at 16, 128 and 2048 tokens.
std::vector<MlpShape> MlpShapes();

// The gated problem of a block (h = silu(alpha x [W_gate | W_up]) per the
// gate), the plain gate (or up) projection the baseline runs, and the down
// projection. alpha = 1 / sqrt(fan-in) keeps the values O(1).
GemmProblem MlpGatedProblem(const MlpShape& shape);
GemmProblem MlpHalfProblem(const MlpShape& shape);
GemmProblem MlpDownProblem(const MlpShape& shape);

// Runs the suite (shapes whose label contains one of `filters`; all when
// empty) and prints one table. Error when a column fails its check or a
// required column (baseline, jitgemm) cannot run.
absl::Status RunMlpSuite(BenchContext& ctx, const TimingConfig& timing, const Options& base,
                         const std::vector<std::string>& filters, std::FILE* out);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_MLP_H_
