// GELU-erf for 16-bit outputs, x * Phi(x) with Phi the standard normal CDF:
// h = Phi(-|x|) = erfc(|x| / sqrt 2) / 2 is the hardware's approximate exp2
// of a degree-7 polynomial in |x|, fitted to log2 h on [0, 4.5 sqrt 2]
// (relative error of the result at most 6.4e-6 there, fp32 rounding
// included); below -4.5 sqrt 2 the result is 0 (|GELU| < 1e-9), above it x.
// Against 0.5 x (1 + erff(x / sqrt 2)): half the instructions, no branch
// between erff's two ranges, and no 1 + erf cancellation in the negative
// tail (docs/kernels.md, "Activations for 16-bit D"). fp32 outputs keep erff.
#pragma once

namespace jitgemm {

__device__ __forceinline__ float Ex2Approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

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

}  // namespace jitgemm
