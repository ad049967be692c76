#include "tools/bench/relu_kernel.h"

#include <nvrtc.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench/cuda_util.h"

namespace jitgemm::bench {
namespace {

// ReLU on the sign bit: a negative f16 / bf16 / f32 becomes +0. 16 bytes per
// thread and loop step where the pointer allows, a scalar tail after.
constexpr char kSource[] = R"(
struct alignas(16) Words { unsigned int w[4]; };

__device__ __forceinline__ unsigned int Relu16x2(unsigned int x) {
  const unsigned int neg = (x >> 15) & 0x00010001u;  // sign bit of each half
  return x & ~(neg * 0xffffu);
}
__device__ __forceinline__ unsigned int Relu32(unsigned int x) {
  return (x & 0x80000000u) ? 0u : x;
}

template <int kBytes>
__device__ void Relu(void* data, unsigned long long count) {
  constexpr unsigned long long kPerWords = 16 / kBytes;
  const unsigned long long vectors =
      (reinterpret_cast<unsigned long long>(data) % 16 == 0) ? count / kPerWords : 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  Words* v = static_cast<Words*>(data);
  for (unsigned long long i = first; i < vectors; i += stride) {
    Words x = v[i];
#pragma unroll
    for (int j = 0; j < 4; ++j) x.w[j] = kBytes == 2 ? Relu16x2(x.w[j]) : Relu32(x.w[j]);
    v[i] = x;
  }
  for (unsigned long long i = vectors * kPerWords + first; i < count; i += stride) {
    if (kBytes == 2) {
      unsigned short* p = static_cast<unsigned short*>(data) + i;
      if (*p & 0x8000u) *p = 0;
    } else {
      unsigned int* p = static_cast<unsigned int*>(data) + i;
      *p = Relu32(*p);
    }
  }
}

extern "C" __global__ void bench_relu16(void* data, unsigned long long count) {
  Relu<2>(data, count);
}
extern "C" __global__ void bench_relu32(void* data, unsigned long long count) {
  Relu<4>(data, count);
}
)";

absl::Status NvrtcCheck(nvrtcResult r, const char* what) {
  if (r == NVRTC_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", nvrtcGetErrorString(r)));
}

// Compiles kSource for `arch` ("sm_90" gives a cubin, "compute_90" PTX).
absl::StatusOr<std::vector<char>> Compile(const std::string& arch, bool cubin) {
  nvrtcProgram prog = nullptr;
  absl::Status s =
      NvrtcCheck(nvrtcCreateProgram(&prog, kSource, "bench_relu.cu", 0, nullptr, nullptr),
                 "nvrtcCreateProgram");
  if (!s.ok()) return s;
  const std::string arch_flag = "--gpu-architecture=" + arch;
  const char* opts[] = {arch_flag.c_str(), "--std=c++17"};
  const nvrtcResult compiled = nvrtcCompileProgram(prog, 2, opts);
  std::vector<char> out;
  if (compiled != NVRTC_SUCCESS) {
    size_t log_size = 0;
    nvrtcGetProgramLogSize(prog, &log_size);
    std::string log(log_size, '\0');
    if (log_size > 0) nvrtcGetProgramLog(prog, log.data());
    nvrtcDestroyProgram(&prog);
    return absl::InternalError(
        absl::StrFormat("NVRTC (%s): %s\n%s", arch, nvrtcGetErrorString(compiled), log));
  }
  size_t size = 0;
  s = NvrtcCheck(cubin ? nvrtcGetCUBINSize(prog, &size) : nvrtcGetPTXSize(prog, &size),
                 "nvrtcGet*Size");
  if (s.ok()) {
    out.resize(size);
    s = NvrtcCheck(cubin ? nvrtcGetCUBIN(prog, out.data()) : nvrtcGetPTX(prog, out.data()),
                   "nvrtcGet*");
  }
  nvrtcDestroyProgram(&prog);
  if (!s.ok()) return s;
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReluKernel>> ReluKernel::Create() {
  int device = 0;
  BENCH_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop = {};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, device));
  const int sm = prop.major * 10 + prop.minor;
  // A cubin for the exact arch; PTX for the driver to finish where NVRTC
  // does not know the arch yet.
  absl::StatusOr<std::vector<char>> image = Compile(absl::StrCat("sm_", sm), true);
  if (!image.ok()) image = Compile(absl::StrCat("compute_", sm), false);
  if (!image.ok()) return image.status();

  std::unique_ptr<ReluKernel> k(new ReluKernel());
  BENCH_CUDA(
      cudaLibraryLoadData(&k->library_, image->data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  BENCH_CUDA(cudaLibraryGetKernel(&k->relu16_, k->library_, "bench_relu16"));
  BENCH_CUDA(cudaLibraryGetKernel(&k->relu32_, k->library_, "bench_relu32"));
  k->max_blocks_ = prop.multiProcessorCount * 8;
  return k;
}

ReluKernel::~ReluKernel() {
  if (library_ != nullptr) cudaLibraryUnload(library_);
}

absl::Status ReluKernel::Launch(void* data, int64_t count, int element_bytes,
                                cudaStream_t stream) const {
  constexpr int kThreads = 256;
  const int64_t vectors = count * element_bytes / 16 + 1;
  const unsigned int blocks = static_cast<unsigned int>(
      std::clamp<int64_t>((vectors + kThreads - 1) / kThreads, 1, max_blocks_));
  unsigned long long n = static_cast<unsigned long long>(count);
  void* args[] = {&data, &n};
  cudaKernel_t kernel = element_bytes == 2 ? relu16_ : relu32_;
  return CudaCheck(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(blocks),
                                    dim3(kThreads), args, 0, stream),
                   "cudaLaunchKernel(bench_relu)");
}

}  // namespace jitgemm::bench
