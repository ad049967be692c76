// How the sm90 epilogues read C (beta != 0) and the bias where it is not
// prefetched (the register epilogue, and fp32 D): with loads that need no
// predicate, so that they can all issue before the first is used. Where a
// warpgroup's tile lies inside the matrix (Inside) nothing is clamped and the
// loads of a row share one address with constant offsets. At the edges the
// TMA-store epilogue clamps each position into the matrix: every load stays
// in bounds, and the value read for a position outside the matrix is
// computed but clipped by the TMA store. (The register epilogue's edge tiles
// keep a bounds test per value instead: clamped loads there made ptxas
// spill.)
//
// Why: with a bounds predicate per load, ptxas kept about four loads in
// flight (seven predicate registers), so a 64 x 256 warpgroup tile's 128 C
// values took some 32 trips to memory after the mainloop, while the tensor
// cores idled: 640 x 4608 x 5000 with C ran at 0.64-0.71x of cuBLAS
// (docs/kernels.md).
//
// Accumulator layout of wgmma.m64nNk16 (per thread of the warpgroup): two
// adjacent columns col, col + 1 with col even, so a row-major C with 4-byte
// (16-bit) or 8-byte (fp32) aligned rows and even N is read a pair per load.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/types.cuh"

namespace jitgemm {
namespace sm90 {

template <class S>
struct CRead {
  using C = typename S::ElementC;
  static constexpr bool kPairs =
      S::kRowC && S::kN % 2 == 0 && S::kAlignC >= 2 * static_cast<int>(sizeof(C));
  struct alignas(2 * sizeof(C)) Two {
    C x, y;
  };

  __device__ __forceinline__ static int Row(int row) { return row < S::kM ? row : S::kM - 1; }
  __device__ __forceinline__ static int Col(int col) { return col < S::kN ? col : S::kN - 1; }

  // A clamped position's offset, in 32 unsigned bits where a batch's C
  // allows: a signed one let the compiler widen each clamped column to 64
  // bits, and ptxas spilled such pairs in tiles of 128 accumulators a thread.
  static constexpr bool kNarrow =
      static_cast<long long>(S::kRowC ? S::kM : S::kN) * S::kLdc < (1LL << 32);
  __device__ __forceinline__ static int64 ClampedOffset(int row, int col) {
    if constexpr (kNarrow) {
      const unsigned r = row, c = col, ld = S::kLdc;
      return S::kRowC ? r * ld + c : c * ld + r;
    } else {
      return Offset<S::kRowC, S::kLdc>(row, col);
    }
  }

  // Whether a warpgroup's rows [m0, m0 + rows) and columns [n0, n0 + cols)
  // lie inside the matrix: then nothing is clamped, and the loads of a row
  // share one address register with constant offsets (clamping each one
  // costs an address pair per load in flight, and ptxas spilled).
  __device__ __forceinline__ static bool Inside(int m0, int rows, int n0, int cols) {
    return m0 + rows <= S::kM && n0 + cols <= S::kN;
  }

  // C at (row, col) and (row, col + 1) of batch `batch`, col even; kClamp
  // false only where Inside.
  template <bool kClamp>
  __device__ __forceinline__ static void Pair(const GemmArgs& args, int batch, int row, int col,
                                              float& c0, float& c1) {
    const C* c = static_cast<const C*>(args.c) + static_cast<int64>(batch) * S::kStrideC;
    if constexpr (!kClamp) {
      if constexpr (kPairs) {
        const Two two = *reinterpret_cast<const Two*>(c + Offset<S::kRowC, S::kLdc>(row, col));
        c0 = ToFloat(two.x);
        c1 = ToFloat(two.y);
      } else {
        c0 = ToFloat(c[Offset<S::kRowC, S::kLdc>(row, col)]);
        c1 = ToFloat(c[Offset<S::kRowC, S::kLdc>(row, col + 1)]);
      }
      return;
    }
    const int r = Row(row);
    if constexpr (kPairs) {
      const int cc = col < S::kN - 2 ? col : S::kN - 2;
      const Two two = *reinterpret_cast<const Two*>(c + ClampedOffset(r, cc));
      c0 = ToFloat(two.x);
      c1 = ToFloat(two.y);
    } else {
      c0 = ToFloat(c[ClampedOffset(r, Col(col))]);
      c1 = ToFloat(c[ClampedOffset(r, Col(col + 1))]);
    }
  }

  // The bias of (row, col) (S::kBias: 1 per column, 2 per row), 0 without
  // one; the position clamped into the matrix with kClamp, else only where
  // Inside.
  template <bool kClamp>
  __device__ __forceinline__ static float Bias(const GemmArgs& args, int batch, int row, int col) {
    if constexpr (S::kBias == 0) {
      return 0.f;
    } else {
      const typename S::ElementD* bias = static_cast<const typename S::ElementD*>(args.bias) +
                                         static_cast<int64>(batch) * S::kStrideBias;
      if constexpr (S::kBias == 1) {
        return ToFloat(bias[kClamp ? Col(col) : col]);
      } else {
        return ToFloat(bias[kClamp ? Row(row) : row]);
      }
    }
  }
};

}  // namespace sm90
}  // namespace jitgemm
