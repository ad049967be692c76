// Activations for the sm90 staged epilogue and the gate pass when they store
// 16-bit D: SiLU and GELU-erf as for every 16-bit D
// (common/activation_16bit.cuh), GELU-tanh on the hardware's tanh. The
// library forms cost more than the product itself on large SiLU problems,
// where the epilogue is not overlapped with the mainloop (docs/kernels.md,
// "Activations for 16-bit D").
#pragma once

#include "jitgemm/common/epilogue.cuh"

namespace jitgemm {
namespace sm90 {

__device__ __forceinline__ float TanhApprox(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
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
  if constexpr (kAct == 3 || kAct == 4) {
    return Activate16Bit<kAct>(x);
  } else {
    return Activate<kAct>(x);
  }
}

}  // namespace sm90
}  // namespace jitgemm
