// x into shared memory by bulk copies for small_m's register-ring path
// (kXMulti, sm_90): copies that complete on mbarriers, multicast to the CTAs
// of a cluster where kSmallMXCluster > 1.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/ptx_sm80.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/ptx.cuh"
#include "jitgemm/small_m/ptx.cuh"
#include "jitgemm/small_m/traits.cuh"

namespace jitgemm {
namespace small_m {

// Issues the bulk copies of x (cluster rank q % C issues copy q) and arms
// the mbarriers s_xbar that count their bytes; c_cta is the CTA's first chunk.
template <class S>
__device__ __forceinline__ void IssueXBulk(const unsigned short* abase, int c_cta, int m_rt,
                                           unsigned long long* s_xbar) {
  using Tr = Traits<S>;
  constexpr int kCW = Tr::kCW, kMP = Tr::kMP, kWarpsK = Tr::kWarpsK;
  extern __shared__ U4 smem_dyn[];
  const int tid = threadIdx.x;
  const int rank = Tr::kXCluster > 1 ? static_cast<int>(sm90::ClusterRank()) : 0;
  const unsigned short mask = static_cast<unsigned short>((1u << Tr::kXCluster) - 1);
  // Copy q is issued by cluster rank q % C and lands in all C CTAs. Rows at
  // or past M are never read into valid outputs (row m of x only feeds
  // column m of D), so they stay unset.
  auto copy = [&](unsigned dst, const unsigned short* src, unsigned bytes, unsigned bar) {
    if (Tr::kXCluster > 1) {
      sm90::BulkCopyMulticast(dst, src, bytes, bar, mask);
    } else {
      sm90::BulkCopy(dst, src, bytes, bar);
    }
  };
  if constexpr (Tr::kXPieces) {
    // Every piece p of all rows is issued before piece p + 1.
    constexpr int kPiece = Tr::kXPieceChunks;
    if (tid < Tr::kXParts) {
      sm90::MbarArriveExpectTx(SmemAddr(&s_xbar[tid]), static_cast<unsigned>(m_rt) * kPiece * 64);
    }
    for (int q = tid; q < Tr::kXParts * m_rt; q += S::kThreads) {
      const int p = q / m_rt, m = q % m_rt;
      if (m % Tr::kXCluster != rank) continue;
      copy(SmemAddr(smem_dyn) + m * Tr::kXRowBytes + p * kPiece * 64,
           abase + static_cast<int64>(m) * S::kLda + (c_cta + p * kPiece) * 32, kPiece * 64,
           SmemAddr(&s_xbar[p]));
    }
  } else {
    if (tid < kWarpsK) {
      sm90::MbarArriveExpectTx(SmemAddr(&s_xbar[tid]), static_cast<unsigned>(m_rt) * kCW * 64);
    }
    for (int q = tid; q < kWarpsK * m_rt; q += S::kThreads) {
      if (q % Tr::kXCluster != rank) continue;
      const int w = q / m_rt, m = q % m_rt;
      copy(SmemAddr(smem_dyn) + (w * kMP + m) * Tr::kXRowBytes,
           abase + static_cast<int64>(m) * S::kLda + (c_cta + w * kCW) * 32, kCW * 64,
           SmemAddr(&s_xbar[w]));
    }
  }
}

}  // namespace small_m
}  // namespace jitgemm
