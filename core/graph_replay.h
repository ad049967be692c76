// The one graph-replay timing primitive of the tuner and jitgemm-bench:
// warm up, capture `launches` calls into one CUDA graph, replay it between
// CUDA events; each replay gives microseconds per call. Timing graph replays
// keeps launch overhead and host jitter out of what is compared.
//
//   JITGEMM_ASSIGN_OR_RETURN(auto graph, CapturedGraph::Capture(launch, stream, {}));
//   for (int r = 0; r < 5; ++r) JITGEMM_ASSIGN_OR_RETURN(us[r], graph->ReplayUs());
//
// Needs the CUDA runtime (library jitgemm_core_cuda, unlike the rest of core/).
//
// Thread safety: one CapturedGraph per thread; calls on one stream at a time.
#ifndef JITGEMM_CORE_GRAPH_REPLAY_H_
#define JITGEMM_CORE_GRAPH_REPLAY_H_

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace jitgemm {

// Enqueues call number `iter` (which may select rotated buffers) on `stream`.
using GraphLaunchFn = std::function<absl::Status(int iter, cudaStream_t stream)>;

struct GraphReplayConfig {
  int launches = 100;  // calls captured into one graph
  int warmup = 3;      // eager calls before capture, then a stream sync
  // Global: a call that is illegal during capture anywhere in the process
  // (an allocation, a sync) fails the capture instead of passing unnoticed.
  // ThreadLocal: only this thread's calls (the tuner, which may run while
  // other threads of the process capture their own graphs).
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
};

class CapturedGraph {
 public:
  // Warms up, captures config.launches calls, uploads the graph and replays
  // it once untimed. A failure inside capture ends the capture cleanly and is
  // returned with the call number; CUDA errors map as core/cuda_status.h says.
  static absl::StatusOr<std::unique_ptr<CapturedGraph>> Capture(const GraphLaunchFn& launch,
                                                                cudaStream_t stream,
                                                                const GraphReplayConfig& config);
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

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

// Microseconds of one eager call `launch(iter, stream)` between CUDA events
// (including its launch): enough to size a graph, not to compare candidates.
absl::StatusOr<double> TimeOneCallUs(const GraphLaunchFn& launch, int iter, cudaStream_t stream);

// The median of per-call samples (the mean of the middle two for an even
// count); 0 for none.
double MedianOf(std::vector<double> samples);

}  // namespace jitgemm

#endif  // JITGEMM_CORE_GRAPH_REPLAY_H_
