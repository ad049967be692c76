#include "core/graph_replay.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cuda_runtime_status.h"
#include "core/status_macros.h"

namespace jitgemm {
namespace {

// A failed call's status; the runtime's last error is cleared so that a
// non-sticky failure is not blamed on the next call.
absl::Status Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  cudaGetLastError();
  return CudaRuntimeStatus(e, what);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CapturedGraph>> CapturedGraph::Capture(
    const GraphLaunchFn& launch, cudaStream_t stream, const GraphReplayConfig& config) {
  for (int i = 0; i < config.warmup; ++i) {
    absl::Status s = launch(i, stream);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("warm-up call: ", s.message()));
  }
  JITGEMM_RETURN_IF_ERROR(Check(cudaStreamSynchronize(stream), "warm-up cudaStreamSynchronize"));

  std::unique_ptr<CapturedGraph> r(new CapturedGraph());
  r->stream_ = stream;
  r->launches_ = config.launches;
  JITGEMM_RETURN_IF_ERROR(
      Check(cudaStreamBeginCapture(stream, config.mode), "cudaStreamBeginCapture"));
  absl::Status failed;
  for (int i = 0; i < config.launches && failed.ok(); ++i) {
    failed = launch(i, stream);
    if (!failed.ok()) {
      failed = absl::Status(failed.code(),
                            absl::StrCat("call ", i, " inside graph capture: ", failed.message()));
    }
  }
  const cudaError_t end = cudaStreamEndCapture(stream, &r->graph_);
  if (!failed.ok()) {
    cudaGetLastError();
    return failed;
  }
  JITGEMM_RETURN_IF_ERROR(Check(end, "cudaStreamEndCapture"));
  JITGEMM_RETURN_IF_ERROR(
      Check(cudaGraphInstantiate(&r->exec_, r->graph_, 0), "cudaGraphInstantiate"));
  JITGEMM_RETURN_IF_ERROR(Check(cudaGraphUpload(r->exec_, stream), "cudaGraphUpload"));
  JITGEMM_RETURN_IF_ERROR(Check(cudaEventCreate(&r->start_), "cudaEventCreate"));
  JITGEMM_RETURN_IF_ERROR(Check(cudaEventCreate(&r->stop_), "cudaEventCreate"));
  JITGEMM_RETURN_IF_ERROR(Check(cudaGraphLaunch(r->exec_, stream), "cudaGraphLaunch"));  // untimed
  JITGEMM_RETURN_IF_ERROR(Check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
  return r;
}

CapturedGraph::~CapturedGraph() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (stop_ != nullptr) cudaEventDestroy(stop_);
}

absl::StatusOr<double> CapturedGraph::ReplayUs() {
  JITGEMM_RETURN_IF_ERROR(Check(cudaEventRecord(start_, stream_), "cudaEventRecord"));
  JITGEMM_RETURN_IF_ERROR(Check(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch"));
  JITGEMM_RETURN_IF_ERROR(Check(cudaEventRecord(stop_, stream_), "cudaEventRecord"));
  JITGEMM_RETURN_IF_ERROR(Check(cudaEventSynchronize(stop_), "cudaEventSynchronize"));
  float ms = 0;
  JITGEMM_RETURN_IF_ERROR(Check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime"));
  return 1000.0 * ms / launches_;
}

absl::StatusOr<double> TimeOneCallUs(const GraphLaunchFn& launch, int iter, cudaStream_t stream) {
  cudaEvent_t start = nullptr, stop = nullptr;
  absl::Status s = Check(cudaEventCreate(&start), "cudaEventCreate");
  if (s.ok()) s = Check(cudaEventCreate(&stop), "cudaEventCreate");
  if (s.ok()) s = Check(cudaEventRecord(start, stream), "cudaEventRecord");
  if (s.ok()) s = launch(iter, stream);
  if (s.ok()) s = Check(cudaEventRecord(stop, stream), "cudaEventRecord");
  if (s.ok()) s = Check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  if (s.ok()) s = Check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  if (start != nullptr) cudaEventDestroy(start);
  if (stop != nullptr) cudaEventDestroy(stop);
  if (!s.ok()) return s;
  return 1000.0 * ms;
}

double MedianOf(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  return n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
}

}  // namespace jitgemm
