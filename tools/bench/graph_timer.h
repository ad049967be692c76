// Timing as BENCHMARKS.md prescribes: warm up, capture `launches` calls into
// one CUDA graph, replay it `replays` times between CUDA events, and report
// the median time per call.
//
// Thread safety: one call at a time per stream.
#ifndef JITGEMM_TOOLS_BENCH_GRAPH_TIMER_H_
#define JITGEMM_TOOLS_BENCH_GRAPH_TIMER_H_

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <vector>

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

// One column's captured graph, ready to replay. Columns of one case are
// replayed in turn (A B C A B C ...) so that clock and temperature drift over
// the run spreads over every column instead of penalising the last one.
class CapturedGraph {
 public:
  // Warms up, captures config.launches calls and replays the graph once
  // untimed. A failure inside capture ends the capture cleanly and is
  // returned with the call number.
  static absl::StatusOr<std::unique_ptr<CapturedGraph>> Capture(const LaunchFn& launch,
                                                                cudaStream_t stream,
                                                                const TimingConfig& config);
  ~CapturedGraph();
  // Microseconds per call of one timed replay.
  absl::StatusOr<double> ReplayUs();

 private:
  CapturedGraph() = default;
  cudaStream_t stream_ = nullptr;
  int launches_ = 0;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

// Median, min and max of per-call samples.
Timing Summarize(std::vector<double> per_call_us);

// Captures and replays one column alone.
absl::StatusOr<Timing> TimeWithGraph(const LaunchFn& launch, cudaStream_t stream,
                                     const TimingConfig& config);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_GRAPH_TIMER_H_
