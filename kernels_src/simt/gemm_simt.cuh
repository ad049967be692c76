// SIMT GEMM: exact fp32 arithmetic (fused multiply-add on CUDA cores) for any
// element types, shapes, layouts and alignments. The reference family: every
// problem the library accepts has a SIMT kernel.
//
// A block computes a kBlockM x kBlockN tile of D with kThreads threads; each
// thread owns a (kBlockM / kWarpsM... ) micro-tile of TM x TN accumulators:
//   TM = kBlockM * kBlockN / (kThreads * TN), TN = 4.
// Tiles of A (kBlockM x kBlockK) and B (kBlockK x kBlockN) go through shared
// memory as fp32. Bounds checks compile away where the shape divides the tile.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/types.cuh"

namespace jitgemm {
namespace simt {

template <class S>
__global__ void __launch_bounds__(S::kThreads) GemmSimt(const GemmArgs args) {
  constexpr int kBM = S::kBlockM, kBN = S::kBlockN, kBK = S::kBlockK;
  constexpr int kTN = 4;
  constexpr int kThreadsN = kBN / kTN;
  constexpr int kThreadsM = S::kThreads / kThreadsN;
  constexpr int kTM = kBM / kThreadsM;
  static_assert(kBN % kTN == 0 && S::kThreads % kThreadsN == 0 && kBM % kThreadsM == 0,
                "SIMT tile does not divide among threads");
  constexpr int kN = S::kN, kK = S::kK;

  // +1 padding: column reads of A would otherwise hit one bank.
  __shared__ float sa[kBK][kBM + 1];
  __shared__ float sb[kBK][kBN + 1];

  const int m_total = S::kM != 0 ? S::kM : args.m;
  const int batch = blockIdx.z;
  const int tile_m = blockIdx.y * kBM;
  const int tile_n = blockIdx.x * kBN;
  const int tid = threadIdx.x;
  const int tn = tid % kThreadsN;
  const int tm = tid / kThreadsN;

  if (S::kPdl) GridDependencyWait();

  const typename S::ElementA* a =
      static_cast<const typename S::ElementA*>(args.a) + static_cast<int64>(batch) * S::kStrideA;
  const typename S::ElementB* b =
      static_cast<const typename S::ElementB*>(args.b) + static_cast<int64>(batch) * S::kStrideB;

  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.f;

  const bool m_full = S::kM != 0 && S::kM % kBM == 0;
  constexpr bool kNFull = kN % kBN == 0;
  constexpr bool kKFull = kK % kBK == 0;

  for (int k0 = 0; k0 < kK; k0 += kBK) {
    // Threads walk the tile along the operand's contiguous dimension, so global
    // reads coalesce for either layout.
    for (int i = tid; i < kBM * kBK; i += S::kThreads) {
      int r, c;  // r: row in tile (m), c: k in tile
      if (S::kRowA) {
        r = i / kBK;
        c = i % kBK;
      } else {
        r = i % kBM;
        c = i / kBM;
      }
      const int gm = tile_m + r, gk = k0 + c;
      float v = 0.f;
      if ((m_full || gm < m_total) && (kKFull || gk < kK)) v = ToFloat(a[Offset<S::kRowA, S::kLda>(gm, gk)]);
      sa[c][r] = v;
    }
    for (int i = tid; i < kBK * kBN; i += S::kThreads) {
      int r, c;  // r: k in tile, c: n in tile
      if (S::kRowB) {
        r = i / kBN;
        c = i % kBN;
      } else {
        r = i % kBK;
        c = i / kBK;
      }
      const int gk = k0 + r, gn = tile_n + c;
      float v = 0.f;
      if ((kKFull || gk < kK) && (kNFull || gn < kN)) v = ToFloat(b[Offset<S::kRowB, S::kLdb>(gk, gn)]);
      sb[r][c] = v;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float av[kTM], bv[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) av[i] = sa[kk][tm + i * kThreadsM];
#pragma unroll
      for (int j = 0; j < kTN; ++j) bv[j] = sb[kk][tn + j * kThreadsN];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }

  if (S::kPdl) LaunchDependents();

#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int gm = tile_m + tm + i * kThreadsM;
    if (!m_full && gm >= m_total) continue;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int gn = tile_n + tn + j * kThreadsN;
      if (!kNFull && gn >= kN) continue;
      StoreD<S>(args, batch, gm, gn, EpilogueValue<S>(args, batch, gm, gn, acc[i][j]));
    }
  }
}

}  // namespace simt
}  // namespace jitgemm
