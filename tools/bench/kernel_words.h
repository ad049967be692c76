// Device code the bench's own baseline kernels share (activation_kernel.cc,
// glu_kernel.cc): 32-bit words as two 16-bit elements or one float, read and
// written with the hardware conversions. The baselines are NVRTC sources of
// their own, independent of the library's kernels, so they carry their own.
//
// kType: 0 f32, 1 f16, 2 bf16 (jitgemm::DataType).
#ifndef JITGEMM_TOOLS_BENCH_KERNEL_WORDS_H_
#define JITGEMM_TOOLS_BENCH_KERNEL_WORDS_H_

namespace jitgemm::bench {

inline constexpr char kWordConversions[] = R"(
struct alignas(16) Words { unsigned int w[4]; };

template <int kType>
__device__ __forceinline__ float Lo(unsigned int x) {
  float f;
  if (kType == 1) {
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)(x & 0xffffu)));
  } else {
    f = __uint_as_float(x << 16);
  }
  return f;
}
template <int kType>
__device__ __forceinline__ float Hi(unsigned int x) {
  float f;
  if (kType == 1) {
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)(x >> 16)));
  } else {
    f = __uint_as_float(x & 0xffff0000u);
  }
  return f;
}
template <int kType>
__device__ __forceinline__ unsigned int Pack(float lo, float hi) {
  unsigned int r;
  if (kType == 1) {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  }
  return r;
}
)";

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_KERNEL_WORDS_H_
