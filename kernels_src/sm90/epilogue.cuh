// Epilogue of the sm90 family: a consumer warpgroup's wgmma accumulators
// (kMI blocks of 64 rows x kBN columns) through alpha, beta * C, bias and the
// activation, stored to D straight from registers. Two adjacent columns go
// out as one 4-byte (16-bit D) or 8-byte (fp32 D) store where row-major D
// allows it.
//
// A gated spec's values arrive finished (gate.cuh) and are stored as they are.
//
// Accumulator layout of wgmma.m64nNk16 (per thread of the warpgroup):
// d[4j + 2h + e] holds row 16 * warp + lane / 4 + 8h, column 8j + 2 * (lane % 4) + e.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/c_read.cuh"
#include "jitgemm/sm90/gate.cuh"

namespace jitgemm {
namespace sm90 {

template <class S, int kMI, int kBN>
struct Epilogue {
  using D = typename S::ElementD;
  static constexpr bool kHalfD = sizeof(D) == 2;
  static constexpr bool kPairs = S::kRowD && S::kAlignD >= 2 * static_cast<int>(sizeof(D));
  // fp32 D with a transcendental activation: values in flight bounded.
  static constexpr bool kF32Act = !kHalfD && S::kAct >= 2 && S::kAct <= 4;

  // The spec with its activation left for the second pass.
  struct WithoutActivation : S {
    static constexpr int kAct = 0;
  };

  // alpha * acc + beta * C + bias in place, in the common EpilogueValue's
  // order. Inside the matrix (kEdge false) C and the bias are read by loads
  // that need no predicate (c_read.cuh); at the edges each value keeps its
  // bounds test (clamped loads there made ptxas spill).
  template <bool kEdge>
  __device__ __forceinline__ static void Values(const GemmArgs& args, float (&acc)[kMI][kBN / 2],
                                                int batch, int m0, int n0, int thread) {
    const int warp = thread >> 5, lane = thread & 31;
    // Columns outside, rows inside: each column's bias is read once for the
    // two rows that use it (row-outer loops kept every bias of a row alive
    // until the next row, and ptxas spilled).
#pragma unroll
    for (int i = 0; i < kMI; ++i) {
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) {
        const int col = n0 + 8 * j + 2 * (lane & 3);
        if constexpr (kEdge) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = m0 + i * 64 + warp * 16 + (lane >> 2) + 8 * h;
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              float& a = acc[i][4 * j + 2 * h + e];
              if (row < S::kM && col + e < S::kN) {
                a = EpilogueValue<WithoutActivation>(args, batch, row, col + e, a);
              }
            }
          }
        } else {
          float c[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
          float bias[2][2];
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = m0 + i * 64 + warp * 16 + (lane >> 2) + 8 * h;
            if constexpr (S::kHasC)
              CRead<S>::template Pair<false>(args, batch, row, col, c[h][0], c[h][1]);
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              bias[h][e] = S::kBias == 2 || h == 0
                               ? CRead<S>::template Bias<false>(args, batch, row, col + e)
                               : bias[0][e];
            }
          }
#pragma unroll
          for (int h = 0; h < 2; ++h) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              float& a = acc[i][4 * j + 2 * h + e];
              a = args.alpha * a;
              if (S::kHasC) a += args.beta * c[h][e];
              a += bias[h][e];
            }
          }
          // Loads in flight for 64 columns at a time, or ptxas spills.
          if ((S::kHasC || S::kBias != 0) && j % 8 == 7) __syncwarp();
        }
      }
    }
  }

  // `m0`, `n0`: the warpgroup's first row and column in the batch matrix.
  // Three passes: everything but the activation (Values: the reads of C and
  // the bias with no store between them, so they overlap), the activation of
  // every value (unconditionally, so the compiler interleaves them; values
  // outside the matrix are never stored), the stores.
  __device__ __forceinline__ static void Store(const GemmArgs& args, float (&acc)[kMI][kBN / 2],
                                               int batch, int m0, int n0, int thread) {
    const int warp = thread >> 5, lane = thread & 31;
    D* d = static_cast<D*>(args.d) + static_cast<int64>(batch) * S::kStrideD;
    if constexpr (GateOf<S>::value == 0) {
      if ((!S::kHasC && S::kBias == 0) || CRead<S>::Inside(m0, 64 * kMI, n0, kBN)) {
        Values<false>(args, acc, batch, m0, n0, thread);
      } else {
        Values<true>(args, acc, batch, m0, n0, thread);
      }
#pragma unroll
      for (int i = 0; i < kMI; ++i) {
#pragma unroll
        for (int r = 0; r < kBN / 2; ++r) {
          acc[i][r] = ActivateFor<D, S::kAct>(acc[i][r]);
          if (kF32Act && r % 32 == 31) __syncwarp();
        }
      }
    }
#pragma unroll
    for (int i = 0; i < kMI; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + i * 64 + warp * 16 + (lane >> 2) + 8 * h;
        if (row >= S::kM) continue;
#pragma unroll
        for (int j = 0; j < kBN / 8; ++j) {
          const int col = n0 + 8 * j + 2 * (lane & 3);
          if (col >= S::kN) continue;
          const float v0 = acc[i][4 * j + 2 * h];
          const bool two = col + 1 < S::kN;
          const float v1 = two ? acc[i][4 * j + 2 * h + 1] : 0.f;
          D* p = d + Offset<S::kRowD, S::kLdd>(row, col);
          if (kPairs && two) {
            if constexpr (kHalfD) {
              *reinterpret_cast<unsigned*>(p) = Pack2<D>(v0, v1);
            } else {
              asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(v0), "f"(v1)
                           : "memory");
            }
          } else {
            p[0] = FromFloat<D>(v0);
            if (two) d[Offset<S::kRowD, S::kLdd>(row, col + 1)] = FromFloat<D>(v1);
          }
        }
      }
    }
  }
};

}  // namespace sm90
}  // namespace jitgemm
