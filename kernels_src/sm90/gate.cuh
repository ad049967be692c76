// The gated epilogue of the sm90 family (SwiGLU, GeGLU): a tile computes
// kBN columns of A [B_gate | B_up], its first kBN / 2 from the gate half of B
// and the rest from the up half at the same output columns (mainloop.cuh
// loads them so), and each thread turns its accumulators into
//
//   out = act(alpha * gate + bias[col]) * (alpha * up + bias[N + col])
//
// for kBN / 2 output columns, which the store epilogues then write as they
// are. Both halves of an output column sit in the same thread: in the
// accumulator layout of wgmma.m64nNk16, d[4j + 2h + e] holds column
// 8j + 2 * (lane % 4) + e, so column c of the gate half is block j and of
// the up half block j + kBN / 16.
//
// A spec is gated when GateOf<S> (common/gate.cuh) says so.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/gate.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/activation.cuh"

namespace jitgemm {
namespace sm90 {

// Output columns a tile of kBN accumulator columns covers.
template <class S, int kBN>
struct OutColumns {
  static constexpr int value = GateOf<S>::value ? kBN / 2 : kBN;
};

template <class S, int kMI, int kBN>
struct GatedEpilogue {
  using D = typename S::ElementD;
  static constexpr int kHalfBlocks = kBN / 16;  // 8-column blocks of one half
  static_assert(kBN % 32 == 0, "each half of the tile holds whole 8-column blocks");

  template <int kAct>
  __device__ __forceinline__ static float Act(float x) {
    if constexpr (sizeof(D) == 2) {
      return ActivateFor16BitD<kAct>(x);
    } else {
      return ActivateFor<float, kAct>(x);
    }
  }

  // `n0`: the warpgroup's first output column.
  __device__ __forceinline__ static void Apply(const GemmArgs& args,
                                               const float (&acc)[kMI][kBN / 2],
                                               float (&out)[kMI][kBN / 4], int batch, int n0,
                                               int thread) {
    const int lane = thread & 31;
    const D* bias = S::kBias == 1 ? static_cast<const D*>(args.bias) +
                                        static_cast<int64>(batch) * S::kStrideBias
                                  : nullptr;
#pragma unroll
    for (int j = 0; j < kHalfBlocks; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = n0 + 8 * j + 2 * (lane & 3) + e;
        float bias_gate = 0.f, bias_up = 0.f;
        if (S::kBias == 1 && col < S::kN) {
          bias_gate = ToFloat(bias[col]);
          bias_up = ToFloat(bias[S::kN + col]);
        }
#pragma unroll
        for (int i = 0; i < kMI; ++i) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const float gate = args.alpha * acc[i][4 * j + 2 * h + e] + bias_gate;
            const float up = args.alpha * acc[i][4 * (j + kHalfBlocks) + 2 * h + e] + bias_up;
            out[i][4 * j + 2 * h + e] = Act<S::kAct>(gate) * up;
          }
        }
      }
    }
  }
};

}  // namespace sm90
}  // namespace jitgemm
