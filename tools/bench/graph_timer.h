// Timing as BENCHMARKS.md prescribes: warm up, capture `launches` calls into
// one CUDA graph, replay it `replays` times between CUDA events, and report
// the median time per call.
//
// Thread safety: one call at a time per stream.
#ifndef JITGEMM_TOOLS_BENCH_GRAPH_TIMER_H_
#define JITGEMM_TOOLS_BENCH_GRAPH_TIMER_H_

#include <cuda_runtime_api.h>

#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace jitgemm::bench {

// Enqueues call number `iter` (which selects the rotated buffers) on `stream`.
using LaunchFn = std::function<absl::Status(int iter, cudaStream_t stream)>;

struct TimingConfig {
  int launches = 100;  // calls captured into one graph
  int replays = 5;     // timed graph replays; the median is reported
  int warmup = 3;      // eager calls before capture
};

// Microseconds per call over the timed replays.
struct Timing {
  double median_us = 0;
  double min_us = 0;  // the spread between min and max tells the noise
  double max_us = 0;
};

// Times the calls. A failure inside capture ends the capture cleanly and is
// returned with the call number.
absl::StatusOr<Timing> TimeWithGraph(const LaunchFn& launch, cudaStream_t stream,
                                     const TimingConfig& config);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_GRAPH_TIMER_H_
