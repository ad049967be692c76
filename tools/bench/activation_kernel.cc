#include "tools/bench/activation_kernel.h"

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

// Activate is kernels_src/common/epilogue.cuh's, character for character
// (bench_support_test compares them). ReLU of f16 / bf16 / f32 works on the
// sign bit, as the earlier ReLU-only kernel did, so ReLU rows stay
// comparable with earlier results; the other activations convert to float,
// apply Activate and round to nearest even, as the fused epilogues store.
constexpr char kBody[] = R"(

namespace jitgemm {

template <int kAct>
__device__ __forceinline__ float Activate(float x) {
  if (kAct == 1) return x > 0.f ? x : 0.f;
  if (kAct == 2) {
    const float kAlpha = 0.7978845608028654f;  // sqrt(2/pi)
    return 0.5f * x * (1.f + tanhf(kAlpha * (x + 0.044715f * x * x * x)));
  }
  if (kAct == 3) return 0.5f * x * (1.f + erff(x * 0.7071067811865476f));
  if (kAct == 4) return x / (1.f + expf(-x));
  return x;
}

}  // namespace jitgemm

__device__ __forceinline__ unsigned int Relu16x2(unsigned int x) {
  const unsigned int neg = (x >> 15) & 0x00010001u;  // sign bit of each half
  return x & ~(neg * 0xffffu);
}
__device__ __forceinline__ unsigned int Relu32(unsigned int x) {
  return (x & 0x80000000u) ? 0u : x;
}

// kAct: jitgemm::Activation; Lo, Hi and Pack are kWordConversions' (kernel_words.h).

// One 32-bit word: two 16-bit elements or one f32.
template <int kType, int kAct>
__device__ __forceinline__ unsigned int Word(unsigned int x) {
  if (kAct == 1) return kType == 0 ? Relu32(x) : Relu16x2(x);
  if (kType == 0) return __float_as_uint(jitgemm::Activate<kAct>(__uint_as_float(x)));
  return Pack<kType>(jitgemm::Activate<kAct>(Lo<kType>(x)),
                     jitgemm::Activate<kAct>(Hi<kType>(x)));
}

template <int kType, int kAct>
__device__ __forceinline__ void Run(void* data, unsigned long long count) {
  constexpr unsigned long long kPerWords = kType == 0 ? 4 : 8;
  const unsigned long long vectors =
      (reinterpret_cast<unsigned long long>(data) % 16 == 0) ? count / kPerWords : 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  Words* v = static_cast<Words*>(data);
  for (unsigned long long i = first; i < vectors; i += stride) {
    Words x = v[i];
#pragma unroll
    for (int j = 0; j < 4; ++j) x.w[j] = Word<kType, kAct>(x.w[j]);
    v[i] = x;
  }
  for (unsigned long long i = vectors * kPerWords + first; i < count; i += stride) {
    if (kType == 0) {
      unsigned int* p = static_cast<unsigned int*>(data) + i;
      *p = Word<kType, kAct>(*p);
    } else {
      unsigned short* p = static_cast<unsigned short*>(data) + i;
      *p = static_cast<unsigned short>(Word<kType, kAct>(*p) & 0xffffu);
    }
  }
}

#define BENCH_ACT(type_name, type, act_name, act)                                  \
  extern "C" __global__ void __launch_bounds__(256)                                \
      bench_act_##type_name##_##act_name(void* data, unsigned long long count) {    \
    Run<type, act>(data, count);                                                   \
  }
#define BENCH_ACT_TYPE(type_name, type)        \
  BENCH_ACT(type_name, type, relu, 1)          \
  BENCH_ACT(type_name, type, gelu_tanh, 2)     \
  BENCH_ACT(type_name, type, gelu_erf, 3)      \
  BENCH_ACT(type_name, type, silu, 4)
BENCH_ACT_TYPE(f32, 0)
BENCH_ACT_TYPE(f16, 1)
BENCH_ACT_TYPE(bf16, 2)
)";

}  // namespace

const char* ActivationKernelSource() {
  static const std::string* const kSource = new std::string(absl::StrCat(kWordConversions, kBody));
  return kSource->c_str();
}

absl::StatusOr<std::string> ActivationKernelName(DataType type, Activation act) {
  if (act == Activation::kNone) {
    return absl::InvalidArgumentError("the activation kernel has no kernel for activation none");
  }
  return absl::StrCat("bench_act_", DataTypeName(type), "_", ActivationName(act));
}

absl::StatusOr<std::vector<char>> CompileActivationKernels(const std::string& arch) {
  return CompileNvrtcImage(ActivationKernelSource(), "bench_activation.cu", arch);
}

absl::StatusOr<std::unique_ptr<ActivationKernel>> ActivationKernel::Create() {
  int device = 0;
  BENCH_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop = {};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, device));
  const int sm = prop.major * 10 + prop.minor;
  // A cubin for the exact arch; PTX for the driver to finish where NVRTC
  // does not know the arch yet.
  absl::StatusOr<std::vector<char>> image = CompileActivationKernels(absl::StrCat("sm_", sm));
  if (!image.ok()) image = CompileActivationKernels(absl::StrCat("compute_", sm));
  if (!image.ok()) return image.status();

  std::unique_ptr<ActivationKernel> k(new ActivationKernel());
  BENCH_CUDA(
      cudaLibraryLoadData(&k->library_, image->data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  for (DataType type : {DataType::kF32, DataType::kF16, DataType::kBF16}) {
    for (Activation act :
         {Activation::kRelu, Activation::kGeluTanh, Activation::kGeluErf, Activation::kSilu}) {
      const std::string name = *ActivationKernelName(type, act);
      BENCH_CUDA(cudaLibraryGetKernel(&k->kernels_[static_cast<int>(type)][static_cast<int>(act)],
                                      k->library_, name.c_str()));
    }
  }
  k->max_blocks_ = prop.multiProcessorCount * 8;
  return k;
}

ActivationKernel::~ActivationKernel() {
  if (library_ != nullptr) cudaLibraryUnload(library_);
}

absl::Status ActivationKernel::Launch(void* data, int64_t count, DataType type, Activation act,
                                      cudaStream_t stream) const {
  if (act == Activation::kNone || count <= 0) return absl::OkStatus();
  const int t = static_cast<int>(type), a = static_cast<int>(act);
  if (t < 0 || t >= kTypes || a < 0 || a >= kActivations) {
    return absl::InvalidArgumentError("activation kernel: unknown type or activation");
  }
  constexpr int kThreads = 256;  // the kernels' __launch_bounds__
  const int64_t vectors = count * DataTypeSize(type) / 16 + 1;
  const unsigned int blocks = static_cast<unsigned int>(
      std::clamp<int64_t>((vectors + kThreads - 1) / kThreads, 1, max_blocks_));
  unsigned long long n = static_cast<unsigned long long>(count);
  void* args[] = {&data, &n};
  return CudaCheck(cudaLaunchKernel(reinterpret_cast<const void*>(kernels_[t][a]), dim3(blocks),
                                    dim3(kThreads), args, 0, stream),
                   "cudaLaunchKernel(bench activation)");
}

}  // namespace jitgemm::bench
