#include "tools/bench/case_data.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "tools/bench/cuda_util.h"

namespace jitgemm::bench {
namespace {

constexpr size_t kReservedBytes = size_t{1} << 30;  // plans, modules, workspaces

absl::Status Upload(const HostBuffer& h, DeviceBuffer& d) {
  BENCH_CUDA(cudaMemcpy(d.get(), h.bytes.data(), h.bytes.size(), cudaMemcpyHostToDevice));
  return absl::OkStatus();
}

// B copies whose sum exceeds twice the L2 (at least 2), so that streaming
// calls find no B in it.
int StreamingCopies(size_t b_bytes) {
  int device = 0, l2 = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess) {
    cudaGetLastError();
    l2 = 64 << 20;
  }
  const size_t b = std::max<size_t>(b_bytes, 1);
  return static_cast<int>(
      std::clamp<size_t>((2 * static_cast<size_t>(l2) + b - 1) / b + 1, 2, 100));
}

}  // namespace

GemmProblem PlainProduct(const GemmProblem& p, int64_t cols) {
  GemmProblem h = p;
  h.n = cols;
  h.epilogue = Epilogue{};
  h.epilogue.alpha = p.epilogue.alpha;
  h.d = {p.d.type, Layout::kRowMajor, cols, p.batch_count > 1 ? p.m * cols : kNoStride};
  h.c = h.d;
  return h;
}

GemmProblem HiddenProblem(const GemmProblem& p) { return PlainProduct(p, BColumns(p)); }

const void* Offset(const void* base, int64_t elements, DataType type) {
  return static_cast<const char*>(base) + elements * DataTypeSize(type);
}

absl::Status Prepare(const BenchCase& bc, int rotate, bool regimes, CaseData& data,
                     int* rotate_used, int* streaming_copies) {
  const GemmProblem& p = bc.problem;
  data.p = p;
  const int64_t batches = p.batch_count;
  const uint64_t seed = std::hash<std::string>()(bc.suite + bc.label);
  data.a = RandomBuffer(p.a.type, BufferElements(p.a, batches, p.m, p.k), seed + 1);
  data.b = RandomBuffer(p.b.type, BufferElements(p.b, batches, p.k, BColumns(p)), seed + 2);
  if (p.epilogue.beta != 0.0f) {
    data.c = RandomBuffer(p.c.type, BufferElements(p.c, batches, p.m, p.n), seed + 3);
  }
  if (p.epilogue.bias != BiasMode::kNone) {
    const int64_t len = p.epilogue.bias == BiasMode::kPerColumn ? BColumns(p) : p.m;
    data.bias =
        RandomBuffer(p.d.type, p.epilogue.bias_batch_stride * (batches - 1) + len, seed + 4);
  }
  data.d_elements = BufferElements(p.d, batches, p.m, p.n);
  if (Gated(p)) data.h_elements = batches * p.m * BColumns(p);

  size_t free_bytes = 0, total_bytes = 0;
  BENCH_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  const size_t fixed = data.a.bytes.size() + data.c.bytes.size() + data.bias.bytes.size() +
                       data.DBytes() + data.HBytes() + kReservedBytes;
  const size_t b_bytes = data.b.bytes.size();
  if (free_bytes < fixed + b_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "needs %d MiB of device memory, %d MiB free", (fixed + b_bytes) >> 20, free_bytes >> 20));
  }
  const size_t fit = (free_bytes - fixed) / std::max<size_t>(b_bytes, 1);
  *rotate_used = static_cast<int>(std::min<size_t>(std::max(rotate, 1), fit));
  *streaming_copies =
      regimes ? static_cast<int>(std::min<size_t>(StreamingCopies(b_bytes), fit)) : 0;
  const int copies = std::max(*rotate_used, *streaming_copies);
  data.rotation = *rotate_used;

  JITGEMM_RETURN_IF_ERROR(data.da.Allocate(data.a.bytes.size()));
  JITGEMM_RETURN_IF_ERROR(Upload(data.a, data.da));
  data.db.resize(copies);
  for (int i = 0; i < copies; ++i) {
    JITGEMM_RETURN_IF_ERROR(data.db[i].Allocate(b_bytes));
    if (i == 0) {
      JITGEMM_RETURN_IF_ERROR(Upload(data.b, data.db[0]));
    } else {
      BENCH_CUDA(cudaMemcpy(data.db[i].get(), data.db[0].get(), b_bytes, cudaMemcpyDeviceToDevice));
    }
  }
  JITGEMM_RETURN_IF_ERROR(data.dd.Allocate(data.DBytes()));
  if (data.h_elements > 0) JITGEMM_RETURN_IF_ERROR(data.dh.Allocate(data.HBytes()));
  if (!data.c.bytes.empty()) {
    JITGEMM_RETURN_IF_ERROR(data.dc.Allocate(data.c.bytes.size()));
    JITGEMM_RETURN_IF_ERROR(Upload(data.c, data.dc));
  }
  if (!data.bias.bytes.empty()) {
    JITGEMM_RETURN_IF_ERROR(data.dbias.Allocate(data.bias.bytes.size()));
    JITGEMM_RETURN_IF_ERROR(Upload(data.bias, data.dbias));
  }
  BENCH_CUDA(cudaDeviceSynchronize());
  return absl::OkStatus();
}

}  // namespace jitgemm::bench
