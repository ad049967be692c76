#include "tune/graph_timer.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cuda_runtime_status.h"
#include "core/graph_replay.h"
#include "core/host_types.h"
#include "core/problem_signature.h"
#include "core/status_macros.h"

namespace jitgemm::tune {
namespace {

constexpr int kLaunchesPerGraph = 40;
constexpr int kReplays = 5;
// GPU time one replay may take: a graph holds fewer launches of a slow
// candidate, so that timing a large problem's candidates stays well under a
// second each instead of 40 x 6 calls (8192^3: about 0.4 s per candidate).
constexpr double kReplayBudgetUs = 3000.0;

absl::Status Cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  cudaGetLastError();  // clear a non-sticky error so later calls are not blamed
  if (e == cudaErrorStreamCaptureUnsupported || e == cudaErrorStreamCaptureImplicit ||
      e == cudaErrorStreamCaptureInvalidated) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": cannot time inside stream capture (", cudaGetErrorString(e), ")"));
  }
  return CudaRuntimeStatus(e, what);
}

// Values in [-1, 1) of the operand's type, rounded to nearest even; cheap
// xorshift, never zeros.
void FillRandom(DataType type, std::vector<uint8_t>* bytes, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  const size_t size = DataTypeSize(type);
  for (size_t i = 0; i + size <= bytes->size(); i += size) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const float f = static_cast<float>((s >> 40) & 0xffff) / 32768.0f - 1.0f + 1.0f / 65536;
    StoreAs(type, bytes->data(), static_cast<int64_t>(i / size), f);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<GraphTimer>> GraphTimer::Create(const GemmProblem& p) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(cudaStreamLegacy, &capture) == cudaSuccess &&
      capture != cudaStreamCaptureStatusNone) {
    return absl::FailedPreconditionError("cannot time inside stream capture");
  }
  std::unique_ptr<GraphTimer> t(new GraphTimer());
  t->problem_ = p;
  const int64_t batch = p.batch_count;
  const size_t a_bytes = OperandSpanBytes(p.a, p.m, p.k, batch);
  const size_t b_bytes = OperandSpanBytes(p.b, p.k, BColumns(p), batch);
  const bool uses_c = p.epilogue.beta != 0.f;
  const size_t c_bytes = uses_c ? OperandSpanBytes(p.c, p.m, p.n, batch) : 0;
  const int64_t bias_len = p.epilogue.bias == BiasMode::kNone
                               ? 0
                               : (p.epilogue.bias == BiasMode::kPerColumn ? BColumns(p) : p.m) +
                                     (batch - 1) * p.epilogue.bias_batch_stride;
  const size_t bias_bytes = bias_len * DataTypeSize(p.d.type);
  const size_t d_bytes = OperandSpanBytes(p.d, p.m, p.n, batch);

  int device = 0, l2 = 0;
  if (absl::Status s = Cuda(cudaGetDevice(&device), "cudaGetDevice"); !s.ok()) return s;
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
  size_t free_bytes = 0, total = 0;
  cudaMemGetInfo(&free_bytes, &total);
  // Enough input copies that one graph's launches cycle through more than
  // twice the L2, as weights streamed from DRAM would; bounded by a quarter
  // of free memory.
  const size_t set_bytes = a_bytes + b_bytes + c_bytes + bias_bytes;
  size_t copies = std::clamp<size_t>((2 * static_cast<size_t>(l2) + set_bytes - 1) / set_bytes, 1,
                                     kLaunchesPerGraph);
  while (copies > 1 && copies * set_bytes > free_bytes / 4) --copies;

  if (absl::Status s = Cuda(cudaStreamCreateWithFlags(reinterpret_cast<cudaStream_t*>(&t->stream_),
                                                      cudaStreamNonBlocking),
                            "cudaStreamCreate");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Cuda(cudaMalloc(&t->d_, d_bytes), "cudaMalloc(d)"); !s.ok()) return s;
  auto upload = [&](void** ptr, size_t bytes, DataType type, uint64_t seed) -> absl::Status {
    if (bytes == 0) return absl::OkStatus();
    if (absl::Status s = Cuda(cudaMalloc(ptr, bytes), "cudaMalloc(scratch)"); !s.ok()) return s;
    std::vector<uint8_t> view(bytes);
    FillRandom(type, &view, seed);
    // On the timer's own stream: a legacy-stream copy could join a capture.
    absl::Status s = Cuda(cudaMemcpyAsync(*ptr, view.data(), bytes, cudaMemcpyHostToDevice,
                                          static_cast<cudaStream_t>(t->stream_)),
                          "cudaMemcpyAsync");
    if (!s.ok()) return s;
    return Cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(t->stream_)), "copy");
  };
  for (size_t i = 0; i < copies; ++i) {
    Set set;
    t->sets_.push_back(set);  // owned before allocation, so the destructor frees it
    Set& s = t->sets_.back();
    absl::Status st = upload(&s.a, a_bytes, p.a.type, 4 * i + 1);
    if (st.ok()) st = upload(&s.b, b_bytes, p.b.type, 4 * i + 2);
    if (st.ok()) st = upload(&s.c, c_bytes, p.c.type, 4 * i + 3);
    if (st.ok()) st = upload(&s.bias, bias_bytes, p.d.type, 4 * i + 4);
    if (!st.ok()) return st;
  }
  return t;
}

GraphTimer::~GraphTimer() {
  for (Set& s : sets_) {
    for (void* p : {s.a, s.b, s.c, s.bias}) {
      if (p != nullptr) cudaFree(p);
    }
  }
  if (d_ != nullptr) cudaFree(d_);
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

absl::StatusOr<double> GraphTimer::MedianUs(const Backend& backend) {
  auto launch = [&](int i, cudaStream_t stream) {
    const Set& s = sets_[i % sets_.size()];
    return backend.Run({s.a, s.b, s.c, d_, s.bias}, reinterpret_cast<CUstream>(stream));
  };
  auto stream = static_cast<cudaStream_t>(stream_);
  // Warm-up outside the graph: first-launch costs (module load) stay out.
  JITGEMM_RETURN_IF_ERROR(launch(0, stream));
  JITGEMM_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream), "warm-up run"));
  // One timed call sizes the graph.
  JITGEMM_ASSIGN_OR_RETURN(const double single_us, TimeOneCallUs(launch, 1, stream));
  GraphReplayConfig config;
  config.launches = std::clamp(static_cast<int>(kReplayBudgetUs / std::max(1.0, single_us)), 2,
                               kLaunchesPerGraph);
  config.warmup = 0;  // done above
  // Other threads of the process may be capturing graphs of their own.
  config.mode = cudaStreamCaptureModeThreadLocal;
  JITGEMM_ASSIGN_OR_RETURN(std::unique_ptr<CapturedGraph> graph,
                           CapturedGraph::Capture(launch, stream, config));
  std::vector<double> us;
  for (int r = 0; r < kReplays; ++r) {
    JITGEMM_ASSIGN_OR_RETURN(const double one, graph->ReplayUs());
    us.push_back(one);
  }
  return MedianOf(std::move(us));
}

}  // namespace jitgemm::tune
