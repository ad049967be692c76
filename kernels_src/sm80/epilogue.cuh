// The sm80 epilogue: D = act(alpha * acc + beta * C + bias) straight from the
// mma accumulators (each thread owns column pairs), with 2-element vector
// loads and stores where the layout and alignment allow; and the split-K
// reduction through the plan's zeroed workspace.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/types.cuh"

namespace jitgemm {
namespace sm80 {

// Two consecutive elements p[0], p[1] as floats; a missing one reads as 0.
// kVec: p is aligned to two elements, so one load fetches both.
template <class E>
__device__ __forceinline__ void LoadPairVec(const E* p, float& x, float& y) {
  unsigned w;
  asm volatile("ld.global.b32 %0, [%1];" : "=r"(w) : "l"(p));
  E lo, hi;
  lo.bits = static_cast<unsigned short>(w & 0xffffu);
  hi.bits = static_cast<unsigned short>(w >> 16);
  x = ToFloat(lo);
  y = ToFloat(hi);
}
template <>
__device__ __forceinline__ void LoadPairVec<float>(const float* p, float& x, float& y) {
  asm volatile("ld.global.v2.f32 {%0, %1}, [%2];" : "=f"(x), "=f"(y) : "l"(p));
}
template <class E, bool kVec>
__device__ __forceinline__ void LoadPair(const E* p, bool ok0, bool ok1, float& x, float& y) {
  if (kVec && ok1) {
    LoadPairVec<E>(p, x, y);
  } else {
    x = ok0 ? ToFloat(p[0]) : 0.f;
    y = ok1 ? ToFloat(p[1]) : 0.f;
  }
}

template <class E>
__device__ __forceinline__ void StorePairVec(E* p, float x, float y) {
  asm volatile("st.global.b32 [%0], %1;" ::"l"(p), "r"(Pack2<E>(x, y)) : "memory");
}
template <>
__device__ __forceinline__ void StorePairVec<float>(float* p, float x, float y) {
  asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(x), "f"(y) : "memory");
}

template <class S, int kMI, int kNI>
struct Epilogue {
  using C = typename S::ElementC;
  using D = typename S::ElementD;
  static constexpr bool kMFull = S::kM != 0 && S::kM % S::kBlockM == 0;
  static constexpr bool kNFull = S::kN % S::kBlockN == 0;
  // Column pairs are contiguous only in row-major C / D.
  static constexpr bool kVecD = S::kRowD && S::kAlignD >= 2 * static_cast<int>(sizeof(D));
  static constexpr bool kVecC = S::kRowC && S::kAlignC >= 2 * static_cast<int>(sizeof(C));
  static constexpr bool kVecBias = S::kAlignBias >= 2 * static_cast<int>(sizeof(D));

  // row0 / col0: the warp tile's origin in D.
  __device__ __forceinline__ static void Store(const GemmArgs& args, float (&acc)[kMI][kNI][4],
                                               int batch, int row0, int col0, int m_total,
                                               int lane) {
    D* d = static_cast<D*>(args.d) + static_cast<int64>(batch) * S::kStrideD;
    const C* c = static_cast<const C*>(args.c) + static_cast<int64>(batch) * S::kStrideC;
    const D* bias = static_cast<const D*>(args.bias) + static_cast<int64>(batch) * S::kStrideBias;
    const float alpha = args.alpha, beta = args.beta;
    const int g = lane >> 2, q = lane & 3;

    // Each access as an immediate offset from the thread's first element:
    // computing every address on its own held a 64-bit register pair per
    // store, and ptxas spilled 64 x 64 warp tiles.
    D* const d_thread = d + Offset<S::kRowD, S::kLdd>(row0 + g, col0 + 2 * q);
    const C* const c_thread = S::kHasC ? c + Offset<S::kRowC, S::kLdc>(row0 + g, col0 + 2 * q) : c;
    // A per-row bias is read once per pair of rows and a per-column one once
    // per column pair, so the loop over rows is the outer one for a per-row
    // bias. Loading all of a thread's row biases first kept them live beside
    // its 128 accumulators in 64 x 64 warp tiles, and ptxas spilled.
    constexpr bool kRowsOuter = S::kBias == 2;
    constexpr int kOuter = kRowsOuter ? kMI : kNI;
    constexpr int kInner = kRowsOuter ? kNI : kMI;
#pragma unroll
    for (int o = 0; o < kOuter; ++o) {
      float bc0 = 0.f, bc1 = 0.f;
      if (S::kBias == 1) {
        const int col = col0 + o * 8 + 2 * q;
        LoadPair<D, kVecBias>(bias + col, kNFull || col < S::kN, kNFull || col + 1 < S::kN, bc0,
                              bc1);
      }
      float brow[2] = {0.f, 0.f};
      if (S::kBias == 2) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = row0 + o * 16 + g + 8 * h;
          if (kMFull || row < m_total) brow[h] = ToFloat(bias[row]);
        }
      }
#pragma unroll
      for (int i = 0; i < kInner; ++i) {
        const int mi = kRowsOuter ? o : i;
        const int ni = kRowsOuter ? i : o;
        const int col = col0 + ni * 8 + 2 * q;
        const bool ok0 = kNFull || col < S::kN;
        const bool ok1 = kNFull || col + 1 < S::kN;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          // Offsets from the thread's first element: constants once unrolled,
          // so every access is one base register plus an immediate.
          const int dr = mi * 16 + 8 * h, dc = ni * 8;
          const int row = row0 + g + dr;
          if (!kMFull && row >= m_total) continue;
          float v0 = alpha * acc[mi][ni][2 * h];
          float v1 = alpha * acc[mi][ni][2 * h + 1];
          if (S::kHasC) {
            float c0, c1;
            const C* cp = c_thread + Offset<S::kRowC, S::kLdc>(dr, dc);
            if (kVecC) {
              LoadPair<C, true>(cp, ok0, ok1, c0, c1);
            } else {
              c0 = ok0 ? ToFloat(cp[0]) : 0.f;
              c1 = ok1 ? ToFloat(cp[Offset<S::kRowC, S::kLdc>(0, 1)]) : 0.f;
            }
            v0 += beta * c0;
            v1 += beta * c1;
          }
          if (S::kBias == 1) {
            v0 += bc0;
            v1 += bc1;
          } else if (S::kBias == 2) {
            v0 += brow[h];
            v1 += brow[h];
          }
          v0 = ActivateFor<D, S::kAct>(v0);
          v1 = ActivateFor<D, S::kAct>(v1);
          StorePairAt(d_thread + Offset<S::kRowD, S::kLdd>(dr, dc), ok0, ok1, v0, v1);
        }
      }
    }
  }

  // Stores the final values of D(row, col) and D(row, col + 1), p pointing at the first.
  __device__ __forceinline__ static void StorePairAt(D* p, bool ok0, bool ok1, float v0,
                                                     float v1) {
    if (kVecD && ok1) {
      StorePairVec<D>(p, v0, v1);
    } else {
      if (ok0) p[0] = FromFloat<D>(v0);
      if (ok1) p[Offset<S::kRowD, S::kLdd>(0, 1)] = FromFloat<D>(v1);
    }
  }
};

// Split-K: every split of a tile writes its partial accumulators to its own
// slot of the workspace and takes a ticket; the last one to arrive adds all
// slots in split order (deterministic), zeroes them and the ticket, and runs
// the epilogue. Workspace layout: kBatch * tiles tickets (u32, padded to 256
// bytes), then kBatch * tiles * kSplitK slots of kThreads * kMI * kNI float4.
template <class S, int kMI, int kNI>
struct SplitK {
  static constexpr int kSlotVec4 = S::kThreads * kMI * kNI;
  static_assert(S::kSplitK <= 16, "kSplitK <= 16");

  // The largest power of two <= limit that divides kNI (at least 1).
  __host__ __device__ static constexpr int GroupSize(int limit) {
    int g = kNI;
    while (g > 1 && g > limit) g /= 2;
    return g;
  }

  __device__ __forceinline__ static long long TicketBytes(long long tiles) {
    return (tiles * 4 + 255) / 256 * 256;
  }

  // Returns true in the block that must finish the tile (acc then holds the sum).
  __device__ __forceinline__ static bool Reduce(const GemmArgs& args, float (&acc)[kMI][kNI][4],
                                                long long tile, long long tiles, int split,
                                                int tid) {
    __shared__ int s_last;
    unsigned* ticket = static_cast<unsigned*>(args.workspace) + tile;
    float* slots = reinterpret_cast<float*>(static_cast<char*>(args.workspace) +
                                            TicketBytes(tiles)) +
                   tile * S::kSplitK * kSlotVec4 * 4;
    {
      float* mine = slots + static_cast<long long>(split) * kSlotVec4 * 4;
#pragma unroll
      for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
        for (int ni = 0; ni < kNI; ++ni) {
          float* p = mine + ((mi * kNI + ni) * S::kThreads + tid) * 4;
          asm volatile("st.global.cg.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p),
                       "f"(acc[mi][ni][0]), "f"(acc[mi][ni][1]), "f"(acc[mi][ni][2]),
                       "f"(acc[mi][ni][3])
                       : "memory");
        }
    }
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    __syncthreads();
    if (tid == 0) {
      unsigned prev;
      asm volatile("atom.global.acq_rel.gpu.add.u32 %0, [%1], 1;"
                   : "=r"(prev)
                   : "l"(ticket)
                   : "memory");
      const int last = prev == static_cast<unsigned>(S::kSplitK - 1);
      if (last) asm volatile("st.global.relaxed.gpu.u32 [%0], 0;" ::"l"(ticket) : "memory");
      s_last = last;
    }
    __syncthreads();
    if (!s_last) return false;
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    // Sum all slots in split order. Loads of kGroup (mi, ni) pairs of every
    // slot are issued together so their latencies overlap; the slots are
    // zeroed after they are read.
    constexpr int kGroup = GroupSize(16 / S::kSplitK);
#pragma unroll
    for (int mi = 0; mi < kMI; ++mi) {
#pragma unroll
      for (int n0 = 0; n0 < kNI; n0 += kGroup) {
        float v[S::kSplitK][kGroup][4];
#pragma unroll
        for (int s = 0; s < S::kSplitK; ++s)
#pragma unroll
          for (int j = 0; j < kGroup; ++j) {
            const float* p = slots + (static_cast<long long>(s) * kSlotVec4 +
                                      (mi * kNI + n0 + j) * S::kThreads + tid) *
                                         4;
            asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                         : "=f"(v[s][j][0]), "=f"(v[s][j][1]), "=f"(v[s][j][2]), "=f"(v[s][j][3])
                         : "l"(p));
          }
#pragma unroll
        for (int s = 0; s < S::kSplitK; ++s)
#pragma unroll
          for (int j = 0; j < kGroup; ++j) {
            float* p = slots + (static_cast<long long>(s) * kSlotVec4 +
                                (mi * kNI + n0 + j) * S::kThreads + tid) *
                                   4;
            asm volatile("st.global.cg.v4.f32 [%0], {%1, %1, %1, %1};" ::"l"(p), "f"(0.f));
          }
#pragma unroll
        for (int j = 0; j < kGroup; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            float sum = v[0][j][e];
#pragma unroll
            for (int s = 1; s < S::kSplitK; ++s) sum += v[s][j][e];
            acc[mi][n0 + j][e] = sum;
          }
      }
    }
    return true;
  }
};

}  // namespace sm80
}  // namespace jitgemm
