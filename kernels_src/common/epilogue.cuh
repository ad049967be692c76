// The fused epilogue D = act(alpha * acc + beta * C + bias), element by element.
// Families with wider stores reuse Activate and the operand loaders.
#pragma once

#include "jitgemm/common/activation_16bit.cuh"
#include "jitgemm/common/activation_f32.cuh"
#include "jitgemm/common/args.cuh"
#include "jitgemm/common/types.cuh"

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

// Activate for a value stored as D: 16-bit D takes the faster forms of
// activation_16bit.cuh, accurate to far inside its rounding; fp32 D those
// of activation_f32.cuh.
template <class D, int kAct>
__device__ __forceinline__ float ActivateFor(float x) {
  if constexpr (kAct < 2 || kAct > 4) {
    return Activate<kAct>(x);
  } else if constexpr (sizeof(D) == 2) {
    return Activate16Bit<kAct>(x);
  } else {
    return ActivateF32<kAct>(x);
  }
}

// Applies everything after the product to one accumulator at (row, col) of
// batch `batch` and returns the value to store in D.
template <class S>
__device__ __forceinline__ float EpilogueValue(const GemmArgs& args, int batch, int row, int col,
                                               float acc) {
  float v = args.alpha * acc;
  if (S::kHasC) {
    const typename S::ElementC* c =
        static_cast<const typename S::ElementC*>(args.c) + static_cast<int64>(batch) * S::kStrideC;
    v += args.beta * ToFloat(c[Offset<S::kRowC, S::kLdc>(row, col)]);
  }
  if (S::kBias != 0) {
    const typename S::ElementD* bias = static_cast<const typename S::ElementD*>(args.bias) +
                                       static_cast<int64>(batch) * S::kStrideBias;
    v += ToFloat(bias[S::kBias == 1 ? col : row]);
  }
  return ActivateFor<typename S::ElementD, S::kAct>(v);
}

template <class S>
__device__ __forceinline__ void StoreD(const GemmArgs& args, int batch, int row, int col,
                                       float value) {
  typename S::ElementD* d =
      static_cast<typename S::ElementD*>(args.d) + static_cast<int64>(batch) * S::kStrideD;
  d[Offset<S::kRowD, S::kLdd>(row, col)] = FromFloat<typename S::ElementD>(value);
}

}  // namespace jitgemm
