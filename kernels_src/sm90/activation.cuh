// Activations for epilogues that store 16-bit D: the hardware's approximate
// exp2, reciprocal and tanh (relative error near 2^-11 at worst, below
// bf16's and fp16's rounding) instead of the IEEE expf, division and tanhf of
// kernels_src/common/epilogue.cuh. The accurate forms cost more than the
// product itself on large SiLU problems, where the epilogue is not overlapped
// with the mainloop. GELU-erf keeps erff.
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

template <int kAct>
__device__ __forceinline__ float ActivateFor16BitD(float x) {
  if (kAct == 2) {
    const float kAlpha = 0.7978845608028654f;  // sqrt(2/pi)
    return 0.5f * x * (1.f + TanhApprox(kAlpha * (x + 0.044715f * x * x * x)));
  }
  if (kAct == 4) return x * RcpApprox(1.f + Ex2Approx(-1.4426950408889634f * x));
  return Activate<kAct>(x);
}

}  // namespace sm90
}  // namespace jitgemm
