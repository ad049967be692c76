#include "tune/graph_timer.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cuda_runtime_status.h"
#include "core/graph_replay.h"
#include "core/host_types.h"
#include "core/problem_signature.h"
#include "core/status_macros.h"
#include "jit/driver_api.h"

namespace jitgemm::tune {
namespace {

// The most launches one graph may hold (tune/measure.h sizes graphs), and so
// the most input copies worth rotating over.
constexpr int kMaxLaunchesPerGraph = 40;
// Random bytes made on the host per operand; the rest of a larger operand is
// filled on the device by doubling copies. Filling a 1.85 GB weight
// (129280 x 7168 bf16) element by element on the host took seconds of a cold
// Plan::Create; the values only need to be random-looking, not unique.
constexpr size_t kHostFillBytes = size_t{4} << 20;

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
  JITGEMM_ASSIGN_OR_RETURN(const jit::DriverApi* api, jit::GetDriver());
  if (jit::DefaultStreamCapturing(*api)) {
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
                                     kMaxLaunchesPerGraph);
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
    const size_t element = DataTypeSize(type);
    const size_t head = std::min(bytes, kHostFillBytes / element * element);
    std::vector<uint8_t> view(head);
    FillRandom(type, &view, seed);
    // On the timer's own stream: a legacy-stream copy could join a capture.
    auto stream = static_cast<cudaStream_t>(t->stream_);
    char* base = static_cast<char*>(*ptr);
    absl::Status s =
        Cuda(cudaMemcpyAsync(base, view.data(), head, cudaMemcpyHostToDevice, stream), "copy");
    // Doubling device-to-device copies of what is filled so far; each copy's
    // source lies entirely before its destination, and the stream orders them.
    for (size_t filled = head; s.ok() && filled < bytes;) {
      const size_t n = std::min(filled, bytes - filled);
      s = Cuda(cudaMemcpyAsync(base + filled, base, n, cudaMemcpyDeviceToDevice, stream),
               "cudaMemcpyAsync(fill)");
      filled += n;
    }
    if (!s.ok()) return s;
    return Cuda(cudaStreamSynchronize(stream), "copy");
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

absl::Status GraphTimer::Launch(const Backend& backend, Regime regime, int iter,
                                void* stream) const {
  const Set& s = regime == Regime::kResident ? sets_[0] : sets_[iter % sets_.size()];
  return backend.Run({s.a, s.b, s.c, d_, s.bias}, static_cast<CUstream>(stream));
}

absl::StatusOr<double> GraphTimer::FirstCallUs(const Backend& backend, Regime regime) {
  auto stream = static_cast<cudaStream_t>(stream_);
  // Warm-up: first-launch costs (module load) stay out; resident inputs are
  // in the L2 afterwards.
  JITGEMM_RETURN_IF_ERROR(Launch(backend, regime, 0, stream));
  JITGEMM_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream), "warm-up run"));
  return TimeOneCallUs([&](int i, cudaStream_t st) { return Launch(backend, regime, i, st); }, 1,
                       stream);
}

namespace {

class GraphReplayer final : public Replayer {
 public:
  explicit GraphReplayer(std::unique_ptr<CapturedGraph> graph) : graph_(std::move(graph)) {}
  absl::StatusOr<double> ReplayUs() override { return graph_->ReplayUs(); }

 private:
  std::unique_ptr<CapturedGraph> graph_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Replayer>> GraphTimer::Capture(const Backend& backend, Regime regime,
                                                              int launches) {
  GraphReplayConfig config;
  config.launches = std::clamp(launches, 1, kMaxLaunchesPerGraph);
  config.warmup = 0;  // FirstCallUs warmed up
  // Other threads of the process may be capturing graphs of their own.
  config.mode = cudaStreamCaptureModeThreadLocal;
  JITGEMM_ASSIGN_OR_RETURN(
      std::unique_ptr<CapturedGraph> graph,
      CapturedGraph::Capture([&](int i, cudaStream_t st) { return Launch(backend, regime, i, st); },
                             static_cast<cudaStream_t>(stream_), config));
  return std::unique_ptr<Replayer>(new GraphReplayer(std::move(graph)));
}

int64_t CurrentDeviceL2Bytes() {
  int device = 0, l2 = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess) {
    cudaGetLastError();  // no device: streaming only, and no error left behind
    return 0;
  }
  return l2;
}

}  // namespace jitgemm::tune
