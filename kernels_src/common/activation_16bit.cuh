// Activations for 16-bit outputs on the hardware's approximate exp2 and
// reciprocal instead of the expf, division, tanhf and erff of
// common/epilogue.cuh: each is accurate to a few fp32 ulps or a few 1e-6
// relative, far inside bf16's and fp16's rounding, for a fraction of the
// instructions (docs/kernels.md, "Activations for 16-bit D"). fp32 outputs
// keep the library forms.
//
// GELU-erf is x * Phi(x), Phi the standard normal CDF: h = Phi(-|x|) =
// erfc(|x| / sqrt 2) / 2 is exp2 of a degree-7 polynomial in |x|, fitted to
// log2 h on [0, 4.5 sqrt 2] (relative error of the result at most 6.4e-6
// there, fp32 rounding included); below -4.5 sqrt 2 the result is 0
// (|GELU| < 1e-9), above it x. Against 0.5 x (1 + erff(x / sqrt 2)): half the
// instructions, no branch between erff's two ranges, and no 1 + erf
// cancellation in the negative tail. SiLU and GELU-tanh are x * sigmoid(z),
// z = x or 2u, as x / (1 + 2^(-z log2 e)).
#pragma once

namespace jitgemm {

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

// x * sigmoid(z) for z = -t / log2 e.
__device__ __forceinline__ float TimesSigmoidOfExp2(float x, float t) {
  return x * RcpApprox(1.f + Ex2Approx(t));
}

// kAct: 2 GELU-tanh, 3 GELU-erf, 4 SiLU (the other activations need no
// transcendental function).
template <int kAct>
__device__ __forceinline__ float Activate16Bit(float x) {
  static_assert(kAct >= 2 && kAct <= 4, "GELU-tanh, GELU-erf or SiLU");
  if (kAct == 2) {
    // t = -2 log2(e) sqrt(2/pi) (x + 0.044715 x^3)
    return TimesSigmoidOfExp2(x, x * fmaf(-0.1029432922f, x * x, -2.302208198f));
  }
  if (kAct == 3) return GeluErfApprox(x);
  return TimesSigmoidOfExp2(x, -1.4426950408889634f * x);
}

}  // namespace jitgemm
