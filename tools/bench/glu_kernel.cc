#include "tools/bench/glu_kernel.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tools/bench/cuda_util.h"
#include "tools/bench/kernel_words.h"
#include "tools/bench/nvrtc_image.h"

namespace jitgemm::bench {
namespace {

// After kWordConversions (kernel_words.h). One 16-byte vector is 4 floats or
// 8 16-bit values.
constexpr char kBody[] = R"(
__device__ __forceinline__ float Silu(float x) { return x / (1.f + __expf(-x)); }

// One 32-bit word of each: two 16-bit elements or one f32.
template <int kType>
__device__ __forceinline__ unsigned int Word(unsigned int g, unsigned int u) {
  if (kType == 0) return __float_as_uint(Silu(__uint_as_float(g)) * __uint_as_float(u));
  return Pack<kType>(Silu(Lo<kType>(g)) * Lo<kType>(u), Silu(Hi<kType>(g)) * Hi<kType>(u));
}

template <int kType>
__device__ __forceinline__ void Run(const void* gate, const void* up, void* out,
                                    unsigned long long count) {
  constexpr unsigned long long kPerVector = kType == 0 ? 4 : 8;
  const bool aligned = ((reinterpret_cast<unsigned long long>(gate) |
                         reinterpret_cast<unsigned long long>(up) |
                         reinterpret_cast<unsigned long long>(out)) % 16) == 0;
  const unsigned long long vectors = aligned ? count / kPerVector : 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const Words* g = static_cast<const Words*>(gate);
  const Words* u = static_cast<const Words*>(up);
  Words* o = static_cast<Words*>(out);
  for (unsigned long long i = first; i < vectors; i += stride) {
    const Words gv = g[i], uv = u[i];
    Words r;
#pragma unroll
    for (int j = 0; j < 4; ++j) r.w[j] = Word<kType>(gv.w[j], uv.w[j]);
    o[i] = r;
  }
  for (unsigned long long i = vectors * kPerVector + first; i < count; i += stride) {
    if (kType == 0) {
      static_cast<unsigned int*>(out)[i] = Word<kType>(static_cast<const unsigned int*>(gate)[i],
                                                       static_cast<const unsigned int*>(up)[i]);
    } else {
      const unsigned int w = Word<kType>(static_cast<const unsigned short*>(gate)[i],
                                         static_cast<const unsigned short*>(up)[i]);
      static_cast<unsigned short*>(out)[i] = static_cast<unsigned short>(w & 0xffffu);
    }
  }
}

#define BENCH_GLU(type_name, type)                                                    \
  extern "C" __global__ void __launch_bounds__(256) bench_silu_mul_##type_name(        \
      const void* gate, const void* up, void* out, unsigned long long count) {          \
    Run<type>(gate, up, out, count);                                                  \
  }
BENCH_GLU(f32, 0)
BENCH_GLU(f16, 1)
BENCH_GLU(bf16, 2)
)";

}  // namespace

const char* GluKernelSource() {
  static const std::string* const kSource = new std::string(absl::StrCat(kWordConversions, kBody));
  return kSource->c_str();
}

std::string GluKernelName(DataType type) {
  return absl::StrCat("bench_silu_mul_", DataTypeName(type));
}

absl::StatusOr<std::vector<char>> CompileGluKernels(const std::string& arch) {
  return CompileNvrtcImage(GluKernelSource(), "bench_silu_mul.cu", arch);
}

absl::StatusOr<std::unique_ptr<GluKernel>> GluKernel::Create() {
  int device = 0;
  BENCH_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop = {};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, device));
  const int sm = prop.major * 10 + prop.minor;
  absl::StatusOr<std::vector<char>> image = CompileGluKernels(absl::StrCat("sm_", sm));
  if (!image.ok()) image = CompileGluKernels(absl::StrCat("compute_", sm));
  if (!image.ok()) return image.status();
  std::unique_ptr<GluKernel> k(new GluKernel());
  BENCH_CUDA(
      cudaLibraryLoadData(&k->library_, image->data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  for (DataType type : {DataType::kF32, DataType::kF16, DataType::kBF16}) {
    const std::string name = GluKernelName(type);
    BENCH_CUDA(
        cudaLibraryGetKernel(&k->kernels_[static_cast<int>(type)], k->library_, name.c_str()));
  }
  k->max_blocks_ = prop.multiProcessorCount * 8;
  return k;
}

GluKernel::~GluKernel() {
  if (library_ != nullptr) cudaLibraryUnload(library_);
}

absl::Status GluKernel::Launch(const void* gate, const void* up, void* out, int64_t count,
                               DataType type, cudaStream_t stream) const {
  if (count <= 0) return absl::OkStatus();
  const int t = static_cast<int>(type);
  if (t < 0 || t >= kTypes) return absl::InvalidArgumentError("silu*mul kernel: unknown type");
  constexpr int kThreads = 256;  // the kernels' __launch_bounds__
  const int64_t vectors = count * DataTypeSize(type) / 16 + 1;
  const unsigned int blocks = static_cast<unsigned int>(
      std::clamp<int64_t>((vectors + kThreads - 1) / kThreads, 1, max_blocks_));
  unsigned long long n = static_cast<unsigned long long>(count);
  void* args[] = {&gate, &up, &out, &n};
  return CudaCheck(cudaLaunchKernel(reinterpret_cast<const void*>(kernels_[t]), dim3(blocks),
                                    dim3(kThreads), args, 0, stream),
                   "cudaLaunchKernel(bench silu*mul)");
}

}  // namespace jitgemm::bench
