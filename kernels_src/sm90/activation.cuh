// Activations for epilogues that store 16-bit D, on the hardware's
// approximate exp2, reciprocal and tanh instead of the expf, division, tanhf
// and erff of kernels_src/common/epilogue.cuh: the library forms cost more
// than the product itself on large SiLU problems, where the epilogue is not
// overlapped with the mainloop. GELU-erf takes one exp2 of a fitted
// polynomial: half of erff's instructions and no branch between two ranges,
// so the compiler can interleave a thread's values, which with one warp a
// scheduler is all that hides their latency (docs/kernels.md, "Activations
// for 16-bit D").
#pragma once

#include "jitgemm/common/epilogue.cuh"

namespace jitgemm {
namespace sm90 {

__device__ __forceinline__ float Ex2Approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float RcpApprox(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float TanhApprox(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// x * Phi(x), Phi the standard normal CDF. h = Phi(-|x|) = erfc(|x| / sqrt 2) / 2
// is exp2 of a degree-7 polynomial in |x|, fitted to log2 h on [0, 4.5 sqrt 2]
// (relative error of the result at most 6.4e-6 there, fp32 rounding
// included); below -4.5 sqrt 2 the result is 0 (|GELU| < 1e-9), above it x.
__device__ __forceinline__ float GeluErfApprox(float x) {
  constexpr float kEnd = 6.3639610306789285f;
  const float u = fminf(fabsf(x), kEnd);
  float p = -1.805704528e-06f;
  p = fmaf(p, u, 6.097363439e-05f);
  p = fmaf(p, u, -9.252218297e-04f);
  p = fmaf(p, u, 8.485276252e-03f);
  p = fmaf(p, u, -5.390930921e-02f);
  p = fmaf(p, u, -4.585215449e-01f);
  p = fmaf(p, u, -1.151223660e+00f);
  p = fmaf(p, u, -9.999988675e-01f);
  const float h = Ex2Approx(p);
  const float phi = x >= 0.f ? 1.f - h : (x >= -kEnd ? h : 0.f);
  return x * phi;
}

template <int kAct>
__device__ __forceinline__ float ActivateFor16BitD(float x) {
  if (kAct == 2) {
    // tanh.approx's error (2^-11 of tanh) stays in 1 + tanh: absolute error
    // at most 2^-12 |x|, the largest relative one 1e-2 near x = -4, where
    // |GELU| is 1e-4. The exact logistic form (exp2 and reciprocal) ran
    // 5% slower on an epilogue-heavy GELU-tanh problem (docs/kernels.md).
    const float kAlpha = 0.7978845608028654f;  // sqrt(2/pi)
    return 0.5f * x * (1.f + TanhApprox(kAlpha * (x + 0.044715f * x * x * x)));
  }
  if (kAct == 3) return GeluErfApprox(x);
  if (kAct == 4) return x * RcpApprox(1.f + Ex2Approx(-1.4426950408889634f * x));
  return Activate<kAct>(x);
}

}  // namespace sm90
}  // namespace jitgemm
