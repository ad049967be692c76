// small_m's register-ring path (any architecture from sm_80; gemm_small_m.cuh
// describes it): W streamed into registers as mma.sync fragments, x through
// shared memory, then ReduceTile.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/ptx_sm80.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/ptx.cuh"
#include "jitgemm/small_m/ptx.cuh"
#include "jitgemm/small_m/reduce.cuh"
#include "jitgemm/small_m/traits.cuh"

namespace jitgemm {
namespace small_m {

template <class S>
__device__ __forceinline__ void RingGemm(const GemmArgs& args) {
  using Tr = Traits<S>;
  using T = typename Tr::T;
  constexpr int kR = Tr::kR, kMG = Tr::kMG, kMP = Tr::kMP, kBN = Tr::kBN;
  constexpr int kStages = Tr::kStages, kCW = Tr::kCW, kCC = Tr::kCC, kCK = Tr::kCK;
  constexpr int kSplitK = Tr::kSplitK, kWarpsN = Tr::kWarpsN, kWarpsK = Tr::kWarpsK;
  constexpr int kGroup = Tr::kGroup;
  constexpr int kK = S::kK, kN = S::kN;
  constexpr int kHint = LoadHintOf<S>::value;
  constexpr bool kEvict = EvictFirstOf<S>::value;
  constexpr bool kXRing = Tr::kXRing;
  constexpr bool kEarlyB = S::kPdl && EarlyBOf<S>::value;
  // First warp-local chunk the L2 prefetch covers (early mode loads the
  // ring's chunks themselves before the wait).
  constexpr int kPfFrom = kEarlyB ? kStages : 0;
  constexpr bool kTriggerEarly = S::kPdl && TriggerOf<S>::value == 0;
  constexpr bool kTriggerLate = S::kPdl && TriggerOf<S>::value != 0;
  // Chunk whose load issue releases the dependents (kTriggerLate): the last
  // (1), the middle (2) or the end of the first quarter (3) of the warp's chunks.
  constexpr int kTrigAt = TriggerOf<S>::value == 2   ? kCW / 2
                          : TriggerOf<S>::value == 3 ? kCW / 4
                                                     : kCW - 1;

  extern __shared__ U4 smem_dyn[];
  __shared__ unsigned s_sink;  // see kEarlyB below; never read
  __shared__ alignas(8) unsigned long long s_xbar[Tr::kXMulti ? Tr::kXBars : 1];

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int wn = warp % kWarpsN;
  const int wk = warp / kWarpsN;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int tile_n = blockIdx.x;
  const int cta_k = blockIdx.y;
  const int batch = blockIdx.z;
  // Run-time M never exceeds the rows kept on chip (the plan guarantees it).
  const int m_rt = S::kM != 0 ? S::kM : CMin(args.m, kMP);

  const unsigned short* bmat =
      static_cast<const unsigned short*>(args.b) + static_cast<int64>(batch) * S::kStrideB;
  const unsigned short* abase =
      static_cast<const unsigned short*>(args.a) + static_cast<int64>(batch) * S::kStrideA;
  const int n_warp = tile_n * kBN + wn * 16 * kR;  // first W row of this warp
  const int c_cta = cta_k * kCC;                   // first global chunk of the CTA
  const int c_warp = c_cta + wk * (Tr::kXPieces ? Tr::kXIUnit : kCW);  // warp's first chunk

  // K cluster: rank 0's mbarrier exists before this arrive; every rank waits
  // before its first push into rank 0 (every CTA has started by then).
  __shared__ alignas(8) unsigned long long s_rbar;  // rank 0: the peers' tiles have landed
  if constexpr (Tr::kClusterK) {
    if (cta_k == 0 && tid == 0) {
      sm90::MbarInit(SmemAddr(&s_rbar), 1);
      sm90::FenceBarrierInit();
    }
    sm90::ClusterArrive();
  }
  if constexpr (Tr::kXMulti) {
    // Every CTA's mbarrier exists before any peer multicasts into it.
    if (tid < Tr::kXBars) {
      sm90::MbarInit(SmemAddr(&s_xbar[tid]), 1);
      sm90::FenceBarrierInit();
    }
    if (Tr::kXCluster > 1) {
      sm90::ClusterSync();
    } else {
      __syncthreads();
    }
  }
  if (S::kPdl) {
    if (kTriggerEarly) LaunchDependents();
#if __CUDA_ARCH__ >= 900
    if (!Tr::kXPieces && Tr::kPrefetch > kPfFrom) {
      const int c_end = CMin(CMin(c_warp + Tr::kPrefetch, c_cta + kCC), kCK);
      const int k_begin = (c_warp + kPfFrom) * 32;
      const int k_end = CMin(c_end * 32, kK);
      if (k_end > k_begin) {
        const unsigned bytes = static_cast<unsigned>(k_end - k_begin) * 2u;
        for (int i = lane; i < 16 * kR; i += 32) {
          const int n = n_warp + i;
          if (Tr::kNFull || n < kN) {
            const unsigned short* p = bmat + static_cast<int64>(n) * S::kLdb + k_begin;
            if (S::kAlignB >= 16) {
              if (bytes >= 16) sm90::PrefetchBulkL2(p, bytes & ~15u);
            } else {
              const char* pc = reinterpret_cast<const char*>(p);
              for (unsigned off = 0; off < bytes; off += 128) PrefetchL2(pc + off);
              PrefetchL2(pc + bytes - 1);
            }
          }
        }
      }
    }
#endif
    if (!kEarlyB) GridDependencyWait();
  }

  unsigned long long policy = 0;
  if (kEvict) policy = EvictFirstPolicy();

  // Row pointers of the warp's W rows at its first chunk, lane offset included.
  const unsigned short* rowp[kR][2];
  bool rowok[kR][2];
#pragma unroll
  for (int r = 0; r < kR; ++r) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      int n = n_warp + r * 16 + h * 8 + g;
      rowok[r][h] = Tr::kNFull || n < kN;
      if (!rowok[r][h]) n = kN - 1;
      rowp[r][h] = bmat + static_cast<int64>(n) * S::kLdb + c_warp * 32 + t * 8;
    }
  }

  // Chunk c of this warp exists (K and split-K remainders).
  auto chunk_valid = [&](int c) { return Tr::kKEven || (wk * kCW + c < kCC && c_warp + c < kCK); };

  // Loads warp-local chunk c of W into w (zeros outside K and N).
  auto load_w = [&](U4(&w)[kR][2], int c) {
    const int cg = c_warp + Tr::ChunkOff(c);
    const bool valid = chunk_valid(c);
    const bool full = Tr::kKFull || cg < kCK - 1;
#pragma unroll
    for (int r = 0; r < kR; ++r) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (valid && (Tr::kNFull || rowok[r][h])) {
          if (full) {
            w[r][h] = Load8<S::kAlignB, kHint, kEvict>(rowp[r][h] + Tr::ChunkOff(c) * 32, policy);
          } else {
            const int count = kK - (cg * 32 + t * 8);
            if (count >= 8) {
              w[r][h] = Load8<S::kAlignB, kHint, kEvict>(rowp[r][h] + Tr::ChunkOff(c) * 32, policy);
            } else if (count > 0) {
              w[r][h] = Load8Partial(rowp[r][h] + Tr::ChunkOff(c) * 32, count);
            } else {
              w[r][h] = ZeroU4();
            }
          }
        } else {
          w[r][h] = ZeroU4();
        }
      }
    }
  };

  // x ring: slot j of this warp holds, per 8-row group mg, the 16-byte unit
  // each lane reads (row mg * 8 + g, k = 32 c + 8 t). Each lane copies exactly
  // the units it reads, so its own cp.async.wait_group makes them visible.
  // Rows at or past M are zero-filled (cp.async src-size 0, no global read).
  const unsigned xr_addr = SmemAddr(smem_dyn) + (warp * kStages * kMG * 32 + lane) * 16;
  const unsigned short* xsrc[kMG];
  unsigned xbytes[kMG];
#pragma unroll
  for (int mg = 0; mg < kMG; ++mg) {
    const int m = mg * 8 + g;
    xbytes[mg] = m < m_rt ? 16u : 0u;
    xsrc[mg] = abase + static_cast<int64>(m < m_rt ? m : 0) * S::kLda + c_warp * 32 + t * 8;
  }
  auto load_x = [&](int slot, int c) {
    if (!chunk_valid(c)) return;
    const int cg = c_warp + c;
    const bool full = Tr::kKFull || cg < kCK - 1;
#pragma unroll
    for (int mg = 0; mg < kMG; ++mg) {
      if (S::kM != 0 && mg * 8 >= S::kM) continue;  // whole group past an exact M
      const unsigned dst = xr_addr + static_cast<unsigned>((slot * kMG + mg) * 32 * 16);
      const int count = full ? 8 : kK - (cg * 32 + t * 8);
      if (count >= 8) {
        if (S::kAlignA >= 16) {
          CpAsync16Z(dst, xsrc[mg] + c * 32, xbytes[mg]);
        } else {  // pointer below 16-byte alignment: narrow loads, synchronous
          StoreShared16(
              dst, xbytes[mg] != 0u ? Load8<S::kAlignA, 0, false>(xsrc[mg] + c * 32, 0) : ZeroU4());
        }
      } else {
        StoreShared16(
            dst, count > 0 && xbytes[mg] != 0u ? Load8Partial(xsrc[mg] + c * 32, count) : ZeroU4());
      }
    }
  };

  U4 ring[kStages][kR][2];
  auto issue = [&](int j, int c) {
    if (c < kCW) {
      load_w(ring[j], c);
      if (kXRing) load_x(j, c);
    }
    if (kXRing) CpAsyncCommit();  // one group per slot, empty ones included
  };

  if constexpr (kEarlyB) {
    // W does not depend on the previous grid (constant_b): its first chunks
    // stream in while that grid finishes; x and every store wait.
    unsigned sink = 0;
#pragma unroll
    for (int j = 0; j < kStages; ++j) {
      if (j < kCW) {
        load_w(ring[j], j);
#pragma unroll
        for (int r = 0; r < kR; ++r) sink ^= ring[j][r][0].x ^ ring[j][r][1].x;
      }
    }
    // ptxas sinks loads whose results are unused below griddepcontrol.wait
    // (legal, and it saves registers), which would start them only after the
    // previous grid. A shared-memory reduction of their xor keeps them above
    // the wait (an atomic, so racecheck sees no conflicting writes).
    asm volatile("red.shared.xor.b32 [%0], %1;" ::"r"(SmemAddr(&s_sink)), "r"(sink) : "memory");
    GridDependencyWait();
#pragma unroll
    for (int j = 0; j < kStages; ++j) {
      if (kXRing && j < kCW) load_x(j, j);
      if (kXRing) CpAsyncCommit();
    }
  } else {
#pragma unroll
    for (int j = 0; j < kStages; ++j) issue(j, j);
  }
  if (kTriggerLate && kTrigAt < kStages) LaunchDependents();

  if constexpr (Tr::kXMulti) {
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

  if (!kXRing && !Tr::kXMulti) {
    // Whole x slice -> shared memory, fragment order: 16-byte unit (chunk cl,
    // row m, quarter t4) lands at ((cl * kMG + m / 8) * 32 + (m % 8) * 4 + t4).
    const unsigned xs_addr = SmemAddr(smem_dyn);
    constexpr int kUnits = Tr::kCCPad * kMP * 4;
    for (int u = tid; u < kUnits; u += S::kThreads) {
      const int t4 = u & 3;
      const int q = u >> 2;
      const int cl = q % Tr::kCCPad;
      const int m = q / Tr::kCCPad;
      if (m >= m_rt) continue;
      const unsigned dst =
          xs_addr + static_cast<unsigned>(((cl * kMG + (m >> 3)) * 32 + (m & 7) * 4 + t4) * 16);
      const int k0 = (c_cta + cl) * 32 + t4 * 8;
      const bool ok = Tr::kKEven || (cl < kCC && k0 < kK);
      if (ok && S::kRowA && S::kAlignA >= 16 && (kK % 8 == 0 || k0 + 8 <= kK)) {
        CpAsync16(dst, abase + static_cast<int64>(m) * S::kLda + k0);
      } else if (ok) {
        unsigned h[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          h[e] = k0 + e < kK ? LoadNc2(abase + Offset<S::kRowA, S::kLda>(m, k0 + e)) : 0u;
        }
        U4 v;
        v.x = h[0] | (h[1] << 16);
        v.y = h[2] | (h[3] << 16);
        v.z = h[4] | (h[5] << 16);
        v.w = h[6] | (h[7] << 16);
        StoreShared16(dst, v);
      } else {
        StoreShared16(dst, ZeroU4());
      }
    }
    CpAsyncWaitAll();
    __syncthreads();
  }

  // kSmallMAccSets 2: the two k16 halves of a chunk feed separate
  // accumulators, halving the dependent mma chain (it is on the critical path
  // once the weights are on chip before x arrives).
  constexpr int kAS = AccSetsOf<S>::value == 2 ? 2 : 1;
  float acc[kR][kMG][4];
  float acc2[kR][kMG][4];
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int mg = 0; mg < kMG; ++mg)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[r][mg][i] = acc2[r][mg][i] = 0.f;

  const U4* xs_lane =
      kXRing ? smem_dyn + warp * kStages * kMG * 32 + lane : smem_dyn + wk * kCW * kMG * 32 + lane;
  const char* xm_lane = reinterpret_cast<const char*>(smem_dyn) +
                        (Tr::kXPieces ? g * Tr::kXRowBytes + (c_warp - c_cta) * 64
                                      : (wk * kMP + g) * Tr::kXRowBytes) +
                        t * 16;

#pragma unroll Tr::kOuterUnroll
  for (int c0 = 0; c0 < kCW; c0 += kStages) {
#pragma unroll
    for (int j = 0; j < kStages; ++j) {
      const int c = c0 + j;
      if (c < kCW) {
        if (kXRing) CpAsyncWaitN(kStages - 1 - (j % kGroup));
        if constexpr (Tr::kXMulti) {
          if (c % Tr::kXPartChunks == 0) {
            sm90::MbarWait(SmemAddr(&s_xbar[Tr::kXPieces ? c / Tr::kXPartChunks : wk]), 0);
          }
        }
        if (chunk_valid(c)) {
          const U4* xc = xs_lane + (kXRing ? j : c) * kMG * 32;
#pragma unroll
          for (int mg = 0; mg < kMG; ++mg) {
            // All kMG groups, also those past a run-time M: branch-free code
            // schedules better, and the plan picks kBlockM close to M.
            const U4 xb = Tr::kXMulti
                              ? *reinterpret_cast<const U4*>(xm_lane + mg * 8 * Tr::kXRowBytes +
                                                             Tr::ChunkOff(c) * 64)
                              : xc[mg * 32];
#pragma unroll
            for (int r = 0; r < kR; ++r) {
              const U4& w0 = ring[j][r][0];
              const U4& w1 = ring[j][r][1];
              Mma16816<T>(acc[r][mg], w0.x, w1.x, w0.y, w1.y, xb.x, xb.y);
              Mma16816<T>(kAS == 2 ? acc2[r][mg] : acc[r][mg], w0.z, w1.z, w0.w, w1.w, xb.z, xb.w);
            }
          }
        }
      }
      if (j % kGroup == kGroup - 1) {
        // Refill the group's slots back to back: each W row gets 64 * kGroup
        // contiguous bytes requested at once.
#pragma unroll
        for (int jj = j - kGroup + 1; jj <= j; ++jj) issue(jj, c0 + jj + kStages);
        const int last = c0 + j + kStages;  // last chunk of this refill
        if (kTriggerLate && last >= kTrigAt && last - kGroup < kTrigAt) LaunchDependents();
      }
    }
  }

  if constexpr (kAS == 2) {
#pragma unroll
    for (int r = 0; r < kR; ++r)
#pragma unroll
      for (int mg = 0; mg < kMG; ++mg)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[r][mg][i] += acc2[r][mg][i];
  }
  // Peers may exit only once every multicast has landed everywhere.
  if constexpr (Tr::kXMulti && Tr::kXCluster > 1) sm90::ClusterArrive();

  ReduceTile<S>(args, acc, m_rt, s_rbar);
}

}  // namespace small_m
}  // namespace jitgemm
