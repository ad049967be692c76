// Timing as BENCHMARKS.md prescribes, on the graph-replay primitive of
// core/graph_replay.h: warm up, capture `launches` calls into one CUDA graph,
// replay it `replays` times between CUDA events, and report the median time
// per call with the spread.
//
// Thread safety: one call at a time per stream.
#ifndef JITGEMM_TOOLS_BENCH_GRAPH_TIMER_H_
#define JITGEMM_TOOLS_BENCH_GRAPH_TIMER_H_

#include <cuda_runtime_api.h>

#include <vector>

#include "absl/status/statusor.h"
#include "core/graph_replay.h"

namespace jitgemm::bench {

using LaunchFn = GraphLaunchFn;

// Columns of one case are captured once each (CapturedGraph) and replayed in
// turn so that clock and temperature drift over the run spreads over every
// column instead of penalising the last one. Each round starts one column
// later (A B C, B C A, C A B, ...): under a power cap a column's place in a
// fixed order alone moved its figure by a few percent.
using ::jitgemm::CapturedGraph;

// The column timed `i`-th in round `round` of `count` columns.
inline size_t RotatedColumn(int round, size_t i, size_t count) {
  return (i + static_cast<size_t>(round)) % count;
}

// Capture as GraphReplayConfig says (100 launches, 3 warm-up calls, global
// capture mode), then `replays` timed replays; the median is reported.
struct TimingConfig : GraphReplayConfig {
  int replays = 5;
};

// Microseconds per call over the timed replays.
struct Timing {
  double median_us = 0;
  double min_us = 0;  // the spread between min and max tells the noise
  double max_us = 0;
};

// Median, min and max of per-call samples.
Timing Summarize(std::vector<double> per_call_us);

// Captures and replays one column alone.
absl::StatusOr<Timing> TimeWithGraph(const LaunchFn& launch, cudaStream_t stream,
                                     const TimingConfig& config);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_GRAPH_TIMER_H_
