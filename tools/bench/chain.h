// The dependent-chain benchmark (issue 5): a decode step's linears feed each
// other (layer l reads what layer l - 1 wrote), so a kernel can start early
// only through programmatic dependent launch. Eight layers with their own
// weights (N = K = 2048 and 4096) are captured into one CUDA graph, repeated to `timing.launches`
// calls, and timed per layer for cuBLAS and the JIT kernels with PDL off, on
// (the default), and on with Options::constant_b.
//
// Thread safety: one call at a time (it uses the context's stream).
#ifndef JITGEMM_TOOLS_BENCH_CHAIN_H_
#define JITGEMM_TOOLS_BENCH_CHAIN_H_

#include <cstdio>

#include "absl/status/status.h"
#include "jitgemm/options.h"
#include "tools/bench/context.h"
#include "tools/bench/graph_timer.h"

namespace jitgemm::bench {

// Prints one table (and returns an error if a column failed its check).
absl::Status RunChainSuite(BenchContext& ctx, const TimingConfig& timing, const Options& base,
                           std::FILE* out);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_CHAIN_H_
