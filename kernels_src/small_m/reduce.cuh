// The end of small_m's register-ring path: the warps' accumulators reduced
// in shared memory, then either stored (one CTA per tile), pushed to cluster
// rank 0 through distributed shared memory (kSmallMClusterK), or summed
// through the workspace by the last CTA of the tile to arrive (split-K).
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/ptx_sm80.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/ptx.cuh"
#include "jitgemm/small_m/ptx.cuh"
#include "jitgemm/small_m/traits.cuh"

namespace jitgemm {
namespace small_m {

// Stores 4 consecutive columns (n .. n+3) of row m after the epilogue; one
// vector store where D is row-major and aligned, element stores otherwise.
template <class S>
__device__ __forceinline__ void StoreOut4(const GemmArgs& args, int batch, int m, int n,
                                          const float (&v)[4]) {
  using TD = typename S::ElementD;
  constexpr bool kNFull = S::kN % 4 == 0;
  constexpr bool kVec2 = S::kRowD && sizeof(TD) == 2 && S::kAlignD >= 8;
  constexpr bool kVec4 = S::kRowD && sizeof(TD) == 4 && S::kAlignD >= 16;
  auto scalar = [&]() {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (n + j < S::kN) {
        StoreD<S>(args, batch, m, n + j, EpilogueValue<S>(args, batch, m, n + j, v[j]));
      }
    }
  };
  if constexpr (kVec2 || kVec4) {
    if (kNFull || n + 3 < S::kN) {
      float e[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) e[j] = EpilogueValue<S>(args, batch, m, n + j, v[j]);
      TD* d = static_cast<TD*>(args.d) + static_cast<int64>(batch) * S::kStrideD +
              Offset<true, S::kLdd>(m, n);
      if constexpr (kVec2) {
        const unsigned lo = Pack2<TD>(e[0], e[1]);
        const unsigned hi = Pack2<TD>(e[2], e[3]);
        asm volatile("st.global.v2.u32 [%0], {%1,%2};" ::"l"(d), "r"(lo), "r"(hi) : "memory");
      } else {
        StoreF4(reinterpret_cast<float*>(d), e[0], e[1], e[2], e[3]);
      }
    } else {
      scalar();
    }
  } else {
    scalar();
  }
}

// acc: this warp's fp32 accumulators (RingGemm's fragment layout); s_rbar:
// rank 0's mbarrier for the peers' tiles (kClusterK only).
template <class S>
__device__ __forceinline__ void ReduceTile(const GemmArgs& args,
                                           float (&acc)[Traits<S>::kR][Traits<S>::kMG][4],
                                           int m_rt, unsigned long long& s_rbar) {
  using Tr = Traits<S>;
  constexpr int kR = Tr::kR, kMG = Tr::kMG, kMP = Tr::kMP, kBN = Tr::kBN;
  constexpr int kSplitK = Tr::kSplitK, kWarpsN = Tr::kWarpsN, kWarpsK = Tr::kWarpsK;
  constexpr int kN = S::kN;
  extern __shared__ U4 smem_dyn[];
  __shared__ unsigned s_last;
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
      sm90::MbarArriveExpectTx(SmemAddr(&s_rbar), static_cast<unsigned>((kSplitK - 1) * m_rt * kBN * 4));
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
    for (int i = tid; i < items; i += S::kThreads) {
      const int m = i / kBN4;
      const int nl = (i % kBN4) * 4;
      float v[4];
      tile_sum(m, nl, v);
      if (Tr::kNFull || n_tile + nl < kN) StoreOut4<S>(args, batch, m, n_tile + nl, v);
    }
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
  for (int i = tid; i < items; i += S::kThreads) {
    const int m = i / kBN4;
    const int nl = (i % kBN4) * 4;
    float p[kSplitK][4];
#pragma unroll
    for (int s = 0; s < kSplitK; ++s) {
      LoadCg4(first + s * (kMP * kBN) + m * kBN + nl, p[s][0], p[s][1], p[s][2], p[s][3]);
    }
    float v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float sum = 0.f;
#pragma unroll
      for (int s = 0; s < kSplitK; ++s) sum += p[s][j];
      v[j] = sum;
    }
    if (Tr::kNFull || n_tile + nl < kN) StoreOut4<S>(args, batch, m, n_tile + nl, v);
  }
  if (tid == 0) StoreRelaxedGpu(counters + tile, 0u);
}

}  // namespace small_m
}  // namespace jitgemm
