#include "tools/bench/graph_timer.h"

#include <algorithm>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tools/bench/cuda_util.h"

namespace jitgemm::bench {
namespace {

// Destroys the graph objects and events on every path out.
struct GraphResources {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  ~GraphResources() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    if (graph != nullptr) cudaGraphDestroy(graph);
    if (start != nullptr) cudaEventDestroy(start);
    if (stop != nullptr) cudaEventDestroy(stop);
  }
};

}  // namespace

absl::StatusOr<Timing> TimeWithGraph(const LaunchFn& launch, cudaStream_t stream,
                                     const TimingConfig& config) {
  for (int i = 0; i < config.warmup; ++i) {
    absl::Status s = launch(i, stream);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("warm-up call: ", s.message()));
  }
  BENCH_CUDA(cudaStreamSynchronize(stream));

  GraphResources r;
  // Global mode: a call that is illegal during capture (an allocation, a
  // sync) anywhere in the process fails the capture instead of passing.
  BENCH_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  absl::Status failed;
  for (int i = 0; i < config.launches && failed.ok(); ++i) {
    failed = launch(i, stream);
    if (!failed.ok()) {
      failed = absl::Status(failed.code(),
                            absl::StrCat("call ", i, " inside graph capture: ", failed.message()));
    }
  }
  const cudaError_t end = cudaStreamEndCapture(stream, &r.graph);
  if (!failed.ok()) return failed;
  BENCH_CUDA(end);
  BENCH_CUDA(cudaGraphInstantiate(&r.exec, r.graph, 0));
  BENCH_CUDA(cudaGraphUpload(r.exec, stream));
  BENCH_CUDA(cudaEventCreate(&r.start));
  BENCH_CUDA(cudaEventCreate(&r.stop));
  BENCH_CUDA(cudaGraphLaunch(r.exec, stream));  // one untimed replay
  BENCH_CUDA(cudaStreamSynchronize(stream));

  std::vector<double> per_call;
  for (int rep = 0; rep < config.replays; ++rep) {
    BENCH_CUDA(cudaEventRecord(r.start, stream));
    BENCH_CUDA(cudaGraphLaunch(r.exec, stream));
    BENCH_CUDA(cudaEventRecord(r.stop, stream));
    BENCH_CUDA(cudaEventSynchronize(r.stop));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, r.start, r.stop));
    per_call.push_back(1000.0 * ms / config.launches);
  }
  std::sort(per_call.begin(), per_call.end());
  const size_t n = per_call.size();
  Timing t;
  t.median_us = n % 2 == 1 ? per_call[n / 2] : 0.5 * (per_call[n / 2 - 1] + per_call[n / 2]);
  t.min_us = per_call.front();
  t.max_us = per_call.back();
  return t;
}

}  // namespace jitgemm::bench
