// Element types and conversions for jitgemm kernels, with no CUDA toolkit
// header: fp16 and bf16 are raw 16-bit values converted with PTX.
#pragma once

namespace jitgemm {

struct half_t {
  unsigned short bits;
};
struct bfloat16_t {
  unsigned short bits;
};

typedef long long int64;

__device__ __forceinline__ float ToFloat(float x) { return x; }
__device__ __forceinline__ float ToFloat(half_t x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
}
__device__ __forceinline__ float ToFloat(bfloat16_t x) {
  return __uint_as_float(static_cast<unsigned>(x.bits) << 16);
}

template <class T>
struct Convert;
template <>
struct Convert<float> {
  __device__ __forceinline__ static float From(float x) { return x; }
};
template <>
struct Convert<half_t> {
  __device__ __forceinline__ static half_t From(float x) {
    half_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(x));
    return h;
  }
};
template <>
struct Convert<bfloat16_t> {
  __device__ __forceinline__ static bfloat16_t From(float x) {
    bfloat16_t h;
#if __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(x));
#else
    // Round to nearest even by hand where the instruction is missing.
    unsigned u = __float_as_uint(x);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) {
      h.bits = 0x7fc0;
    } else {
      u += 0x7fffu + ((u >> 16) & 1u);
      h.bits = static_cast<unsigned short>(u >> 16);
    }
#endif
    return h;
  }
};

template <class T>
__device__ __forceinline__ T FromFloat(float x) {
  return Convert<T>::From(x);
}

// Packs two floats into one 32-bit register of two 16-bit values, lo first.
template <class T>
__device__ __forceinline__ unsigned Pack2(float lo, float hi);
template <>
__device__ __forceinline__ unsigned Pack2<half_t>(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
template <>
__device__ __forceinline__ unsigned Pack2<bfloat16_t>(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

template <class T, class U>
struct IsSame {
  static constexpr bool value = false;
};
template <class T>
struct IsSame<T, T> {
  static constexpr bool value = true;
};

}  // namespace jitgemm
