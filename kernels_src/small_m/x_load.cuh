// x into shared memory for small_m's register-ring path: the layout and reads
// of a column-major x streamed by the x ring; by bulk copies (kXMulti, sm_90)
// that complete on mbarriers, multicast to the CTAs of a cluster where
// kSmallMXCluster > 1; or the CTA's whole x slice staged by its threads
// before the main loop (rows or columns not 16 bytes apart).
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

// A column-major x in the ring (Traits::kXRingCol): the 32 k of a chunk sit
// as 32 rows of 16 bytes (8 rows of x each) per 8-row group, k-offset l in
// row XColRow(l). The flip of l's bits 1-2 by its 8-k group puts the 8 rows one
// ldmatrix phase reads ({0, 1, 8, 9, 16, 17, 24, 25} + 2 q) in 8 distinct
// bank groups.
__device__ __forceinline__ int XColRow(int l) { return l ^ (((l >> 3) & 3) << 1); }

// The block row lane `lane` addresses for XColFragment: matrix q = lane / 8
// holds k-offsets 8 i + 2 q + {0, 1} (i = 0..3), so that after the transpose
// thread (g, t) has k = 8 t + 2 q + {0, 1} of row g in register q, the
// fragment order of a row-major x unit.
__device__ __forceinline__ int XColReadRow(int lane) {
  const int q = lane >> 3, r = lane & 7;
  return XColRow(8 * (r >> 1) + (r & 1) + 2 * q);
}

// One 8-row group of a column-major x chunk as the B fragments of a chunk's
// two m16n8k16 products (addr: the block plus XColReadRow(lane) * 16).
__device__ __forceinline__ U4 XColFragment(unsigned addr) {
  unsigned r[4];
  Ldmatrix4<true>(r, addr);
  U4 v;
  v.x = r[0];
  v.y = r[1];
  v.z = r[2];
  v.w = r[3];
  return v;
}

// Byte offset of x unit (chunk cl, row m, quarter t4) in the staged slice:
// fragment order, kMG 8-row groups a chunk.
template <int kMG>
__device__ __forceinline__ unsigned XUnitOffset(int cl, int m, int t4) {
  return static_cast<unsigned>(((cl * kMG + (m >> 3)) * 32 + (m & 7) * 4 + t4) * 16);
}

// Units [0, kUnits) of the x slice by element loads (see StageXSlice).
// Neighbouring threads take neighbouring addresses, so that a warp's loads
// share sectors: along m (kAlongM) or along k. With kBatch > 1 each thread has
// kBatch units' loads in flight before it stores any, since the main loop
// waits for the whole slice.
template <class S, bool kAlongM, int kBatch>
__device__ __forceinline__ void StageXUnits(const unsigned short* abase, int c_cta, int m_rt,
                                            unsigned xs_addr) {
  using Tr = Traits<S>;
  constexpr int kMP = Tr::kMP, kMG = Tr::kMG, kCC = Tr::kCC, kK = S::kK;
  constexpr int kUnits = Tr::kCCPad * kMP * 4;
  auto unit = [&](int u, int& m, int& t4, int& cl) {
    if constexpr (kAlongM) {
      m = u % kMP, t4 = (u / kMP) & 3, cl = (u / kMP) >> 2;
    } else {
      t4 = u & 3, cl = (u >> 2) % Tr::kCCPad, m = (u >> 2) / Tr::kCCPad;
    }
  };
  if constexpr (kBatch == 1) {
    for (int u = threadIdx.x; u < kUnits; u += S::kThreads) {
      int m, t4, cl;
      unit(u, m, t4, cl);
      if (m >= m_rt) continue;
      const unsigned dst = xs_addr + XUnitOffset<kMG>(cl, m, t4);
      const int k0 = (c_cta + cl) * 32 + t4 * 8;
      if (Tr::kKEven || (cl < kCC && k0 < kK)) {
        unsigned h[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          h[e] = k0 + e < kK ? LoadNc2(abase + Offset<S::kRowA, S::kLda>(m, k0 + e)) : 0u;
        }
        StoreShared16(dst, Pack8(h));
      } else {
        StoreShared16(dst, ZeroU4());
      }
    }
  } else {
    for (int u0 = threadIdx.x; u0 < kUnits; u0 += kBatch * S::kThreads) {
      unsigned h[kBatch][8];
      int dst[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int u = u0 + b * S::kThreads;
        int m, t4, cl;
        unit(u, m, t4, cl);
        const int k0 = (c_cta + cl) * 32 + t4 * 8;
        const bool ok = u < kUnits && m < m_rt && (Tr::kKEven || (cl < kCC && k0 < kK));
        dst[b] = u < kUnits && m < m_rt ? static_cast<int>(XUnitOffset<kMG>(cl, m, t4)) : -1;
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          h[b][e] = ok && k0 + e < kK ? LoadNc2(abase + Offset<S::kRowA, S::kLda>(m, k0 + e)) : 0u;
        }
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        if (dst[b] < 0) continue;
        StoreShared16(xs_addr + static_cast<unsigned>(dst[b]), Pack8(h[b]));
      }
    }
  }
}

// The CTA's whole x slice (chunks c_cta.., rows < m_rt) into shared memory in
// fragment order: 16-byte unit (chunk cl, row m, quarter t4) lands at
// ((cl * kMG + m / 8) * 32 + (m % 8) * 4 + t4). Units wholly past K are zero.
// The caller waits for the cp.async groups and the CTA barrier.
template <class S>
__device__ __forceinline__ void StageXSlice(const unsigned short* abase, int c_cta, int m_rt) {
  using Tr = Traits<S>;
  constexpr int kMP = Tr::kMP, kMG = Tr::kMG, kCC = Tr::kCC, kK = S::kK;
  constexpr int kUnits = Tr::kCCPad * kMP * 4;
  extern __shared__ U4 smem_dyn[];
  const unsigned xs_addr = SmemAddr(smem_dyn);
  if constexpr (S::kRowA && S::kAlignA >= 16) {
    for (int u = threadIdx.x; u < kUnits; u += S::kThreads) {
      const int t4 = u & 3, cl = (u >> 2) % Tr::kCCPad, m = (u >> 2) / Tr::kCCPad;
      if (m >= m_rt) continue;
      const unsigned dst = xs_addr + XUnitOffset<kMG>(cl, m, t4);
      const int k0 = (c_cta + cl) * 32 + t4 * 8;
      const bool ok = Tr::kKEven || (cl < kCC && k0 < kK);
      if (ok && (kK % 8 == 0 || k0 + 8 <= kK)) {
        CpAsync16(dst, abase + static_cast<int64>(m) * S::kLda + k0);
      } else if (ok) {
        StoreShared16(dst, Load8Partial(abase + static_cast<int64>(m) * S::kLda + k0, kK - k0));
      } else {
        StoreShared16(dst, ZeroU4());
      }
    }
  } else if (S::kM != 0 ? S::kM >= 8 : m_rt >= 8) {
    // At least 8 rows: most of a thread's units have a row to load.
    StageXUnits<S, !S::kRowA, 4>(abase, c_cta, m_rt, xs_addr);
  } else {
    // Fewer rows: along m, lanes past M would idle, and four units in flight
    // measured 7-16% slower (M = 1, 2 and 4), so one unit at a time along k.
    StageXUnits<S, false, 1>(abase, c_cta, m_rt, xs_addr);
  }
}

}  // namespace small_m
}  // namespace jitgemm
