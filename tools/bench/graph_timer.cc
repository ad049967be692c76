#include "tools/bench/graph_timer.h"

#include <algorithm>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tools/bench/cuda_util.h"

namespace jitgemm::bench {
absl::StatusOr<std::unique_ptr<CapturedGraph>> CapturedGraph::Capture(const LaunchFn& launch,
                                                                      cudaStream_t stream,
                                                                      const TimingConfig& config) {
  for (int i = 0; i < config.warmup; ++i) {
    absl::Status s = launch(i, stream);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("warm-up call: ", s.message()));
  }
  BENCH_CUDA(cudaStreamSynchronize(stream));

  std::unique_ptr<CapturedGraph> r(new CapturedGraph());
  r->stream_ = stream;
  r->launches_ = config.launches;
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
  const cudaError_t end = cudaStreamEndCapture(stream, &r->graph_);
  if (!failed.ok()) return failed;
  BENCH_CUDA(end);
  BENCH_CUDA(cudaGraphInstantiate(&r->exec_, r->graph_, 0));
  BENCH_CUDA(cudaGraphUpload(r->exec_, stream));
  BENCH_CUDA(cudaEventCreate(&r->start_));
  BENCH_CUDA(cudaEventCreate(&r->stop_));
  BENCH_CUDA(cudaGraphLaunch(r->exec_, stream));  // one untimed replay
  BENCH_CUDA(cudaStreamSynchronize(stream));
  return r;
}

CapturedGraph::~CapturedGraph() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (stop_ != nullptr) cudaEventDestroy(stop_);
}

absl::StatusOr<double> CapturedGraph::ReplayUs() {
  BENCH_CUDA(cudaEventRecord(start_, stream_));
  BENCH_CUDA(cudaGraphLaunch(exec_, stream_));
  BENCH_CUDA(cudaEventRecord(stop_, stream_));
  BENCH_CUDA(cudaEventSynchronize(stop_));
  float ms = 0;
  BENCH_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
  return 1000.0 * ms / launches_;
}

Timing Summarize(std::vector<double> per_call) {
  std::sort(per_call.begin(), per_call.end());
  const size_t n = per_call.size();
  Timing t;
  if (n == 0) return t;
  t.median_us = n % 2 == 1 ? per_call[n / 2] : 0.5 * (per_call[n / 2 - 1] + per_call[n / 2]);
  t.min_us = per_call.front();
  t.max_us = per_call.back();
  return t;
}

absl::StatusOr<Timing> TimeWithGraph(const LaunchFn& launch, cudaStream_t stream,
                                     const TimingConfig& config) {
  auto graph = CapturedGraph::Capture(launch, stream, config);
  if (!graph.ok()) return graph.status();
  std::vector<double> per_call;
  for (int rep = 0; rep < config.replays; ++rep) {
    auto us = (*graph)->ReplayUs();
    if (!us.ok()) return us.status();
    per_call.push_back(*us);
  }
  return Summarize(std::move(per_call));
}

}  // namespace jitgemm::bench
