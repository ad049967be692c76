// Activations for fp32 outputs, as accurate as the library forms of
// common/epilogue.cuh (a few ulps) but with no branch: the IEEE division's
// slow path and erff's two ranges each end a basic block, which kept the
// compiler from interleaving the values of a tile, so on short-K problems
// the activation cost more than the product (docs/kernels.md, "Activations
// for fp32 D").
//
// SiLU and GELU-tanh are x * sigmoid(z), z = x or 2u, as x / (1 + e^-z) with
// the fast division; the quotient is 0 where 1 + e^-z passes 2^126, and there
// |act| < 1e-36. The sigmoid form also keeps GELU-tanh's relative accuracy in
// the negative tail, where 1 + tanhf(u) cancels. SiLU takes expf; GELU-tanh
// takes ex2.approx of z log2(e) folded into its polynomial, which rounds z
// about as much as forming u does (largest relative error measured 1.2e-6,
// as with expf) for fewer registers: with expf, sm80 tiles of 128 x 128 and
// more spilled 240-264 bytes without a bias.
//
// GELU-erf is x * Phi(x) with Phi(-|x|) = exp2 of a degree-11 polynomial in
// |x| fitted to log2 Phi on [0, 4.5 sqrt 2] (scripts/fit_gelu_erf.py): the
// 16-bit form of activation_16bit.cuh with more terms. Relative error in fp32
// arithmetic (before ex2.approx's own 2^-22): 2.3e-7 for |x| < 0.5, where
// 0.5 x (1 + erff) has 1.4e-7; 1.0e-6 on [-4, -2), where 1 + erff cancels to
// 4.6e-4; 0 below -4.5 sqrt 2, where |GELU| < 1e-9, as 1 + erff rounds to.
#pragma once

#include "jitgemm/common/activation_16bit.cuh"

namespace jitgemm {

__device__ __forceinline__ float GeluErfF32(float x) {
  constexpr float kEnd = 6.3639610306789285f;
  const float u = fminf(fabsf(x), kEnd);
  float p = 1.659064885e-09f;
  p = fmaf(p, u, -6.694779131e-08f);
  p = fmaf(p, u, 1.191375191e-06f);
  p = fmaf(p, u, -1.217795580e-05f);
  p = fmaf(p, u, 7.639399701e-05f);
  p = fmaf(p, u, -2.639602171e-04f);
  p = fmaf(p, u, -5.546713146e-05f);
  p = fmaf(p, u, 7.036325522e-03f);
  p = fmaf(p, u, -5.251352862e-02f);
  p = fmaf(p, u, -4.591941833e-01f);
  p = fmaf(p, u, -1.151107430e+00f);
  p = fmaf(p, u, -1.f);
  const float h = Ex2Approx(p);
  const float phi = x >= 0.f ? 1.f - h : (x >= -kEnd ? h : 0.f);
  return x * phi;
}

// kAct: 2 GELU-tanh, 3 GELU-erf, 4 SiLU (the other activations need no
// transcendental function).
template <int kAct>
__device__ __forceinline__ float ActivateF32(float x) {
  static_assert(kAct >= 2 && kAct <= 4, "GELU-tanh, GELU-erf or SiLU");
  if (kAct == 2) {
    const float k = 2.302208198f;  // 2 sqrt(2/pi) log2(e)
    return __fdividef(x, 1.f + Ex2Approx(-k * fmaf(0.044715f * x, x * x, x)));
  }
  if (kAct == 3) return GeluErfF32(x);
  return __fdividef(x, 1.f + expf(-x));
}

}  // namespace jitgemm
