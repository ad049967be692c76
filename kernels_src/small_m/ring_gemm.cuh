// small_m's register-ring path (any architecture from sm_80; gemm_small_m.cuh
// describes it): W streamed into registers as mma.sync fragments, x through
// shared memory (bulk copies in x_load.cuh), the warps'
// accumulators reduced in shared memory, then stored, pushed to cluster rank 0
// (kClusterK) or summed through the workspace by the last CTA (split-K).
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/ptx_sm80.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/ptx.cuh"
#include "jitgemm/small_m/ptx.cuh"
#include "jitgemm/small_m/store_out.cuh"
#include "jitgemm/small_m/traits.cuh"
#include "jitgemm/small_m/x_load.cuh"

namespace jitgemm {
namespace small_m {

// Stores n tile `tile_n` of the CTA through the epilogue: sum(m, nl, v)
// gives the reduced values of the tile's rows nl .. nl + 3 of W at row m of
// x. A gated tile pairs each group of 4 gate rows with the up rows 8 further
// on (Traits::WRow).
template <class S, class Sum>
__device__ __forceinline__ void StoreTile(const GemmArgs& args, int batch, int tile_n, int m_rt,
                                          int tid, const Sum& sum) {
  using Tr = Traits<S>;
  if constexpr (Tr::kGated) {
    constexpr int kOut4 = Tr::kOutBN / 4;
    for (int i = tid; i < m_rt * kOut4; i += S::kThreads) {
      const int m = i / kOut4, q = i % kOut4;
      const int n = tile_n * Tr::kOutBN + 4 * q;
      if (!Tr::kNFull && n >= S::kN) continue;
      const int nl = ((q >> 1) << 4) + ((q & 1) << 2);
      float gate[4], up[4];
      sum(m, nl, gate);
      sum(m, nl + 8, up);
      StoreGated4<S>(args, batch, m, n, gate, up);
    }
  } else {
    constexpr int kBN4 = Tr::kBN / 4;
    const int n_tile = tile_n * Tr::kBN;
    for (int i = tid; i < m_rt * kBN4; i += S::kThreads) {
      const int m = i / kBN4;
      const int nl = (i % kBN4) * 4;
      float v[4];
      sum(m, nl, v);
      if (Tr::kNFull || n_tile + nl < S::kN) StoreOut4<S>(args, batch, m, n_tile + nl, v);
    }
  }
}

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
  constexpr bool kXCol = Tr::kXRingCol;
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
  __shared__ unsigned s_last;
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
  const int nl_warp = wn * 16 * kR;  // the warp's first row of the CTA's W tile
  const int c_cta = cta_k * kCC;     // first global chunk of the CTA
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
      // Waited on just before the first multicast (IssueXBulk), so that the
      // cluster barrier's latency hides behind the W loads issued before it.
      sm90::ClusterArriveRelaxed();
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
          bool ok;
          const int n = Tr::WRow(tile_n, nl_warp + i, ok);
          if (ok) {
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
      int n = Tr::WRow(tile_n, nl_warp + r * 16 + h * 8 + g, rowok[r][h]);
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
  // A column-major x (kXCol, one 8-row group) instead has lane l copy column
  // k = 32 c + l into row XColRow(l) of the slot: lanes read each other's
  // copies, so the warp syncs after the wait and before it refills a slot.
  const unsigned xr_addr =
      SmemAddr(smem_dyn) + (warp * kStages * kMG * 32 + (kXCol ? XColRow(lane) : lane)) * 16;
  const unsigned short* xsrc[kMG];
  unsigned xbytes[kMG];
#pragma unroll
  for (int mg = 0; mg < kMG; ++mg) {
    if constexpr (kXCol) {
      // The rows below M; the rest of the 16 bytes is zero-filled.
      xbytes[mg] = static_cast<unsigned>(m_rt) * 2u;
      xsrc[mg] = abase + static_cast<int64>(c_warp * 32 + lane) * S::kLda;
    } else {
      const int m = mg * 8 + g;
      xbytes[mg] = m < m_rt ? 16u : 0u;
      xsrc[mg] = abase + static_cast<int64>(m < m_rt ? m : 0) * S::kLda + c_warp * 32 + t * 8;
    }
  }
  auto load_x = [&](int slot, int c) {
    if (!chunk_valid(c)) return;
    const int cg = c_warp + c;
    const bool full = Tr::kKFull || cg < kCK - 1;
    if constexpr (kXCol) {
      const unsigned dst = xr_addr + static_cast<unsigned>(slot * 32 * 16);
      const unsigned short* src = xsrc[0] + static_cast<int64>(c) * 32 * S::kLda;
      const unsigned bytes = full || cg * 32 + lane < kK ? xbytes[0] : 0u;
      if (S::kAlignA >= 16) {
        CpAsync16(dst, src, bytes);
      } else {  // pointer below 16-byte alignment: narrow loads, synchronous
        StoreShared16(dst, bytes == 16u  ? Load8<S::kAlignA, 0, false>(src, 0)
                           : bytes != 0u ? Load8Partial(src, static_cast<int>(bytes / 2))
                                         : ZeroU4());
      }
      return;
    }
#pragma unroll
    for (int mg = 0; mg < kMG; ++mg) {
      if (S::kM != 0 && mg * 8 >= S::kM) continue;  // whole group past an exact M
      const unsigned dst = xr_addr + static_cast<unsigned>((slot * kMG + mg) * 32 * 16);
      const int count = full ? 8 : kK - (cg * 32 + t * 8);
      if (count >= 8) {
        if (S::kAlignA >= 16) {
          CpAsync16(dst, xsrc[mg] + c * 32, xbytes[mg]);
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

  if constexpr (Tr::kXMulti && Tr::kXCluster > 1) sm90::ClusterWait();
  if constexpr (Tr::kXMulti) IssueXBulk<S>(abase, c_cta, m_rt, s_xbar);

  if (!kXRing && !Tr::kXMulti) {
    StageXSlice<S>(abase, c_cta, m_rt);
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
  const unsigned xt_lane =
      SmemAddr(smem_dyn) + (warp * kStages * kMG * 32 + XColReadRow(lane)) * 16;
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
        if (kXCol) __syncwarp();
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
            const U4 xb =
                Tr::kXMulti ? *reinterpret_cast<const U4*>(xm_lane + mg * 8 * Tr::kXRowBytes +
                                                           Tr::ChunkOff(c) * 64)
                : kXCol     ? XColFragment(xt_lane + static_cast<unsigned>((j * kMG + mg) * 512))
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
        if (kXCol) __syncwarp();
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

  // Warp accumulators -> shared tile T[wk][m][n_local] (aliases the x buffer).
  __syncthreads();
  float* tsm = reinterpret_cast<float*>(smem_dyn);
  {
    float* tw = tsm + wk * kMP * Tr::kTStride;
#pragma unroll
    for (int r = 0; r < kR; ++r) {
#pragma unroll
      for (int mg = 0; mg < kMG; ++mg) {
        const int nl = wn * 16 * kR + r * 16 + g;
        const int m = mg * 8 + 2 * t;
        tw[m * Tr::kTStride + nl] = acc[r][mg][0];
        tw[(m + 1) * Tr::kTStride + nl] = acc[r][mg][1];
        tw[m * Tr::kTStride + nl + 8] = acc[r][mg][2];
        tw[(m + 1) * Tr::kTStride + nl + 8] = acc[r][mg][3];
      }
    }
  }
  __syncthreads();

  constexpr int kBN4 = kBN / 4;
  const int items = m_rt * kBN4;
  const int n_tile = tile_n * kBN;
  auto tile_sum = [&](int m, int nl, float(&v)[4]) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float s = 0.f;
#pragma unroll
      for (int q = 0; q < kWarpsK; ++q) s += tsm[(q * kMP + m) * Tr::kTStride + nl + j];
      v[j] = s;
    }
  };
  if constexpr (Tr::kClusterK) {
    // One way: ranks 1.. push their reduced tile into rank 0 (st.async,
    // counted on rank 0's mbarrier) and exit at once; rank 0 sums and stores.
    // Nobody waits at a cluster barrier for the slowest rank, so an SM is
    // free for the next grid as soon as its CTA is done: 2048 x 4096 bf16
    // M = 16 ran 6.74-6.78 us against 6.94-7.03 with both ranks exchanging
    // halves behind a cluster barrier (H100, kernel harness).
    sm90::ClusterWait();  // rank 0 has started and initialised s_rbar
    const unsigned recv0 = SmemAddr(smem_dyn) + static_cast<unsigned>(Tr::kRecvOff);
    if (cta_k != 0) {
      const unsigned bar = sm90::MapaShared(SmemAddr(&s_rbar), 0u);
      const unsigned recv =
          sm90::MapaShared(recv0 + static_cast<unsigned>((cta_k - 1) * kMP * kBN * 4), 0u);
      for (int i = tid; i < items; i += S::kThreads) {
        const int m = i / kBN4;
        const int nl = (i % kBN4) * 4;
        float v[4];
        tile_sum(m, nl, v);
        sm90::StoreAsyncF4(recv + static_cast<unsigned>((m * kBN + nl) * 4), v, bar);
      }
      return;
    }
    if (tid == 0) {
      sm90::MbarArriveExpectTx(SmemAddr(&s_rbar),
                               static_cast<unsigned>((kSplitK - 1) * m_rt * kBN * 4));
    }
    // Rank 0 sums its own warps while the peers' tiles are in flight.
    constexpr int kPer = (kMP * kBN4 + S::kThreads - 1) / S::kThreads;
    float mine[kPer][4];
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const int i = tid + u * S::kThreads;
      if (i < items) tile_sum(i / kBN4, (i % kBN4) * 4, mine[u]);
    }
    sm90::MbarWait(SmemAddr(&s_rbar), 0);
    const float* recv_f =
        reinterpret_cast<const float*>(reinterpret_cast<const char*>(smem_dyn) + Tr::kRecvOff);
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const int i = tid + u * S::kThreads;
      if (i >= items) continue;
      const int m = i / kBN4;
      const int nl = (i % kBN4) * 4;
#pragma unroll
      for (int s = 0; s < kSplitK - 1; ++s) {
#pragma unroll
        for (int j = 0; j < 4; ++j) mine[u][j] += recv_f[(s * kMP + m) * kBN + nl + j];
      }
      if (Tr::kNFull || n_tile + nl < kN) StoreOut4<S>(args, batch, m, n_tile + nl, mine[u]);
    }
    return;
  }
  if (kSplitK == 1) {
    StoreTile<S>(args, batch, tile_n, m_rt, tid, tile_sum);
    if constexpr (Tr::kXMulti && Tr::kXCluster > 1) sm90::ClusterWait();
    return;
  }

  // Split-K: partial tile -> workspace; the last CTA of the tile to arrive
  // sums all partials. bar.sync + thread 0's acq_rel atomic order every
  // thread's partial stores before the arrival (release is cumulative).
  unsigned* counters = static_cast<unsigned*>(args.workspace);
  float* parts = reinterpret_cast<float*>(static_cast<char*>(args.workspace) + Tr::kCounterBytes);
  const int tile = batch * Tr::kTilesN + tile_n;
  float* mine = parts + (static_cast<int64>(tile) * kSplitK + cta_k) * (kMP * kBN);
  for (int i = tid; i < items; i += S::kThreads) {
    const int m = i / kBN4;
    const int nl = (i % kBN4) * 4;
    float v[4];
    tile_sum(m, nl, v);
    StoreF4(mine + m * kBN + nl, v[0], v[1], v[2], v[3]);
  }
  __syncthreads();
  if (tid == 0) {
    s_last = AtomicAddAcqRelGpu(counters + tile, 1u) == static_cast<unsigned>(kSplitK - 1);
  }
  __syncthreads();
  if (!s_last) return;

  const float* first = parts + static_cast<int64>(tile) * kSplitK * (kMP * kBN);
  StoreTile<S>(args, batch, tile_n, m_rt, tid, [&](int m, int nl, float(&v)[4]) {
    float p[kSplitK][4];
#pragma unroll
    for (int s = 0; s < kSplitK; ++s) {
      LoadCg4(first + s * (kMP * kBN) + m * kBN + nl, p[s][0], p[s][1], p[s][2], p[s][3]);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float sum = 0.f;
#pragma unroll
      for (int s = 0; s < kSplitK; ++s) sum += p[s][j];
      v[j] = sum;
    }
  });
  if (tid == 0) StoreRelaxedGpu(counters + tile, 0u);
}

}  // namespace small_m
}  // namespace jitgemm
