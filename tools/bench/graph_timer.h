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
// column instead of penalising the last one. Under the power cap a column
// also pays for the load just before it, so a fixed cyclic order (A B C, B C A,
// ...) penalises whatever always follows the heaviest column (docs/tuning.md).
// The rounds follow a Williams design instead: every column takes every place,
// and follows every other column, equally often, over `count` rounds (an even
// count) or 2 * `count` (an odd one).
using ::jitgemm::CapturedGraph;

// The column timed `i`-th in round `round` of `count` columns.
inline size_t ColumnOrder(int round, size_t i, size_t count) {
  // Row 0 is 0, 1, n-1, 2, n-2, ...; row r adds r; an odd count also takes
  // the n rows mirrored.
  const size_t n = count;
  if (n == 0) return 0;
  const size_t period = n % 2 == 0 ? n : 2 * n;
  size_t r = static_cast<size_t>(round) % period;
  const bool mirror = r >= n;
  r %= n;
  const size_t j = mirror ? n - 1 - i : i;
  const size_t base = j % 2 == 1 ? (j + 1) / 2 : (n - j / 2) % n;
  return (base + r) % n;
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
