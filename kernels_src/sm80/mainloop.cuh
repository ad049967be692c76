// The sm80 main loop: a kStages-deep cp.async pipeline of (A, B) k-tiles in
// shared memory, ldmatrix fragments, mma.sync m16n8k16 with fp32 accumulators.
//
// Warp (wm, wn) of the kWarpsM x kWarpsN grid owns a kWM x kWN sub-tile:
// kMI x kNI mma tiles of 16 x 8. Fragment layouts (PTX ISA, m16n8k16):
//   A a0..a3: (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15)
//   B b0, b1: (k 0-7), (k 8-15) of an 8-column slab, thread t holds k = 2(t%4), +1 at n = t/4
//   C c0..c3: (row t/4, col 2(t%4), +1), (row t/4 + 8, same cols)
// An operand whose contiguous dimension is K is read with plain ldmatrix; one
// contiguous along M or N is read with ldmatrix.trans.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/gate.cuh"
#include "jitgemm/common/ptx_sm80.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm80/gate.cuh"
#include "jitgemm/sm80/tile.cuh"

namespace jitgemm {
namespace sm80 {

template <class S>
struct Mainloop {
  using T = typename S::ElementA;
  static constexpr int kBM = S::kBlockM, kBN = S::kBlockN, kBK = S::kBlockK;
  static constexpr int kWM = kBM / S::kWarpsM, kWN = kBN / S::kWarpsN;
  static constexpr int kMI = kWM / 16, kNI = kWN / 8, kKS = kBK / 16;
  static constexpr int kThreads = S::kThreads;
  static_assert(S::kThreads == 32 * S::kWarpsM * S::kWarpsN, "kThreads must be 32 * warps");
  static_assert(kBM % (16 * S::kWarpsM) == 0, "warp tile M must be a multiple of 16");
  static_assert(kBN % (16 * S::kWarpsN) == 0, "warp tile N must be a multiple of 16");
  static_assert(kBK % 16 == 0, "kBlockK must be a multiple of 16");
  static_assert(S::kStages >= 2, "at least two pipeline stages");

  // Registers a thread has beyond its accumulators, fragments, addresses
  // and epilogue (of 255, 40 kept for the last two).
  static constexpr int kFreeRegs = 255 - 40 - kMI * kNI * 4 - 2 * (kMI * 4 + kNI * 2);
  // cp.async a thread issues for one operand tile a k tile.
  __host__ __device__ static constexpr int Copies(int rows, int inner, int align) {
    return (rows * (inner / 8) + kThreads - 1) / kThreads * (align >= 4 ? 16 / align : 1);
  }
  static constexpr int kCopies =
      Copies(kBM, kBK, S::kAlignA) +
      Copies(kBN, kBK, GateOf<S>::value != 0 && S::kRowB ? UpHalfAlign<S>::value : S::kAlignB);
  // Edge chunks are copied inline (tile.cuh) where at least 64 registers are
  // free (warp tiles up to 32 x 64) and a thread issues at most 32 copies a
  // k tile. Past either, the inline sizes spilled.
  static constexpr bool kEdgeInline = kFreeRegs >= 64 && kCopies <= 32;

  static constexpr bool kAKContig = S::kRowA;   // A(m, k) at m * lda + k
  static constexpr bool kBKContig = !S::kRowB;  // B(k, n) at n * ldb + k
  using TileA = SmemTile<kAKContig ? kBM : kBK, kAKContig ? kBK : kBM>;
  using TileB = SmemTile<kBKContig ? kBN : kBK, kBKContig ? kBK : kBN>;
  using LoaderA = TileLoader<T, kAKContig ? kBM : kBK, kAKContig ? kBK : kBM, kThreads, S::kLda,
                             S::kAlignA, kEdgeInline>;
  using LoaderB = TileLoader<T, kBKContig ? kBN : kBK, kBKContig ? kBK : kBN, kThreads, S::kLdb,
                             S::kAlignB, kEdgeInline>;
  // A gated tile's B columns interleave the gate and up halves (gate.cuh).
  static constexpr bool kGated = GateOf<S>::value != 0;
  static constexpr int kOutBN = kGated ? kBN / 2 : kBN;  // columns of D a tile covers
  using GatedLoaderB =
      GatedBLoader<T, kBKContig, kBN, kBK, kThreads, S::kLdb,
                   kBKContig ? S::kAlignB : UpHalfAlign<S>::value, S::kN, kEdgeInline>;
  static constexpr int kStageBytes = TileA::kBytes + TileB::kBytes;
  static constexpr int kSmemBytes = kStageBytes * S::kStages;

  static constexpr bool kMFull = S::kM != 0 && S::kM % kBM == 0;
  static constexpr bool kNFull = S::kN % kOutBN == 0;
  static constexpr bool kKFull = S::kK % kBK == 0;
  static constexpr int kKTiles = (S::kK + kBK - 1) / kBK;

  // Rows of A or B on 2 bytes are held in registers over a k tile's MMAs
  // (tile.cuh) where the warp tile leaves room: at least 128 registers free
  // for up to 2 chunks a thread and 180 for up to 4. Else they are copied one chunk at a time:
  // larger warp tiles measured slower with a tile's reads issued together,
  // as fewer blocks fit an SM, and 4 chunks of a 32 x 16 warp tile spilled
  // on sm_80 (docs/kernels.md).
  static constexpr int kStagedChunks =
      LoaderA::kStagedChunks + (kGated ? GatedLoaderB::kStagedChunks : LoaderB::kStagedChunks);
  static constexpr bool kHold = kStagedChunks > 0 &&
                                (kStagedChunks <= 2 ? kFreeRegs >= 128
                                                    : kStagedChunks <= 4 && kFreeRegs >= 180);
  struct Staged {
    typename LoaderA::Staged a;
    typename LoaderB::Staged b;
    typename GatedLoaderB::Staged gb;
  };

  // Issues the copies of k-tile `kt` into the stage at `smem`; held ones land
  // in shared memory at StoreStage. a, b: this batch's matrices; m0, n0:
  // the block's tile origin (in D's columns when gated).
  __device__ __forceinline__ static void LoadStage(Staged& st, unsigned smem, const T* a,
                                                   const T* b, int m0, int n0, int m_total, int kt,
                                                   int tid) {
    const int k0 = kt * kBK;
    if (kAKContig) {
      LoaderA::template Load<!kMFull, !kKFull, kHold>(
          st.a, smem, a + static_cast<int64>(m0) * S::kLda + k0, a, m_total - m0, S::kK - k0, tid);
    } else {
      LoaderA::template Load<!kKFull, !kMFull, kHold>(
          st.a, smem, a + static_cast<int64>(k0) * S::kLda + m0, a, S::kK - k0, m_total - m0, tid);
    }
    const unsigned sb = smem + TileA::kBytes;
    if constexpr (kGated) {
      const T* b_k0 = kBKContig ? b + k0 : b + static_cast<int64>(k0) * S::kLdb;
      GatedLoaderB::template Load<!kNFull, !kKFull, kHold>(st.gb, sb, b_k0, b, n0, S::kN - n0,
                                                           S::kK - k0, tid);
    } else if (kBKContig) {
      LoaderB::template Load<!kNFull, !kKFull, kHold>(
          st.b, sb, b + static_cast<int64>(n0) * S::kLdb + k0, b, S::kN - n0, S::kK - k0, tid);
    } else {
      LoaderB::template Load<!kKFull, !kNFull, kHold>(
          st.b, sb, b + static_cast<int64>(k0) * S::kLdb + n0, b, S::kK - k0, S::kN - n0, tid);
    }
  }

  // Writes the held chunks of the stage last loaded.
  __device__ __forceinline__ static void StoreStage(const Staged& st, int tid) {
    if constexpr (!kHold) return;
    LoaderA::Store(st.a, tid);
    if constexpr (kGated) {
      GatedLoaderB::Store(st.gb, tid);
    } else {
      LoaderB::Store(st.b, tid);
    }
  }

  // Per-thread ldmatrix coordinates, fixed for the whole loop.
  struct Lanes {
    int a_row, a_chunk;  // A: smem row / chunk for mi = 0, kk = 0
    int b_row, b_chunk;  // B: smem row / chunk for pair 0, kk = 0
  };

  __device__ __forceinline__ static Lanes MakeLanes(int wm0, int wn0, int lane) {
    Lanes l;
    if (kAKContig) {  // [m][k]: matrices (m0-7,k0-7) (m8-15,k0-7) (m0-7,k8-15) (m8-15,k8-15)
      l.a_row = wm0 + (lane & 15);
      l.a_chunk = lane >> 4;
    } else {  // [k][m], trans: same four matrices
      l.a_row = (lane & 7) + ((lane >> 4) << 3);
      l.a_chunk = (wm0 >> 3) + ((lane >> 3) & 1);
    }
    if (kBKContig) {  // [n][k]: (n0-7,k0-7) (n0-7,k8-15) (n8-15,k0-7) (n8-15,k8-15)
      l.b_row = wn0 + (lane & 7) + ((lane >> 4) << 3);
      l.b_chunk = (lane >> 3) & 1;
    } else {  // [k][n], trans: same order
      l.b_row = (lane & 7) + (((lane >> 3) & 1) << 3);
      l.b_chunk = (wn0 >> 3) + (lane >> 4);
    }
    return l;
  }

  __device__ __forceinline__ static void LoadFragments(unsigned (&af)[kMI][4],
                                                       unsigned (&bf)[kNI][2], unsigned sa,
                                                       unsigned sb, const Lanes& l, int kk) {
#pragma unroll
    for (int mi = 0; mi < kMI; ++mi) {
      int off;
      if (kAKContig) {
        off = TileA::Offset(l.a_row, mi * 16, l.a_chunk + kk * 2);
      } else {
        off = TileA::Offset(l.a_row, kk * 16, l.a_chunk + mi * 2);
      }
      Ldmatrix4<!kAKContig>(af[mi], sa + off);
    }
#pragma unroll
    for (int p = 0; p < kNI / 2; ++p) {
      int off;
      if (kBKContig) {
        off = TileB::Offset(l.b_row, p * 16, l.b_chunk + kk * 2);
      } else {
        off = TileB::Offset(l.b_row, kk * 16, l.b_chunk + p * 2);
      }
      unsigned r[4];
      Ldmatrix4<!kBKContig>(r, sb + off);
      bf[2 * p][0] = r[0];
      bf[2 * p][1] = r[1];
      bf[2 * p + 1][0] = r[2];
      bf[2 * p + 1][1] = r[3];
    }
  }

  __device__ __forceinline__ static void Mma(float (&acc)[kMI][kNI][4],
                                             const unsigned (&af)[kMI][4],
                                             const unsigned (&bf)[kNI][2]) {
#pragma unroll
    for (int mi = 0; mi < kMI; ++mi) {
#pragma unroll
      for (int j = 0; j < kNI; ++j) {
        const int ni = (mi & 1) ? kNI - 1 - j : j;  // serpentine: reuse B registers
        Mma16816<T>(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
      }
    }
  }

  // Runs k-tiles [kt_begin, kt_begin + kt_count) through the pipeline.
  //
  // Per k-tile: kKS steps of k16. Fragments are double-buffered in registers:
  // step kk loads the fragments of step kk + 1 before its mma. At the last
  // step, the barrier that makes the next stage visible comes before loading
  // that stage's first fragments, so the mma of the last step overlaps them;
  // the copies of the tile kStages - 1 ahead are issued at step 0, into the
  // stage every warp finished reading before that barrier. Held chunks of
  // that tile are written just before the next barrier, after the MMAs of
  // all but the last step.
  __device__ __forceinline__ static void Run(float (&acc)[kMI][kNI][4], unsigned smem, const T* a,
                                             const T* b, int m0, int n0, int m_total, int kt_begin,
                                             int kt_count, int wm0, int wn0, int tid) {
    static_assert(kKS >= 2 && kKS % 2 == 0, "kBlockK must be 32, 64 or 128");
#pragma unroll
    for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
      for (int ni = 0; ni < kNI; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.f;

    const Lanes lanes = MakeLanes(wm0, wn0, tid & 31);
    Staged st;
#pragma unroll
    for (int s = 0; s < S::kStages - 1; ++s) {
      if (s < kt_count) {
        LoadStage(st, smem + s * kStageBytes, a, b, m0, n0, m_total, kt_begin + s, tid);
        StoreStage(st, tid);
      }
      CpAsyncCommit();
    }
    unsigned af[2][kMI][4], bf[2][kNI][2];
    CpAsyncWait<S::kStages - 2>();
    __syncthreads();
    LoadFragments(af[0], bf[0], smem, smem + TileA::kBytes, lanes, 0);

    int read = 0, write = S::kStages - 1;
    for (int it = 0; it < kt_count; ++it) {
      const unsigned sa = smem + read * kStageBytes, sb = sa + TileA::kBytes;
      const int next_read = read + 1 == S::kStages ? 0 : read + 1;
      const bool load_next = it + S::kStages - 1 < kt_count;
#pragma unroll
      for (int kk = 0; kk < kKS; ++kk) {
        if (kk == kKS - 1) {
          if (it + 1 < kt_count) {
            if (load_next) StoreStage(st, tid);
            CpAsyncWait<S::kStages - 2>();
            __syncthreads();
            const unsigned na = smem + next_read * kStageBytes;
            LoadFragments(af[0], bf[0], na, na + TileA::kBytes, lanes, 0);
          }
        } else {
          LoadFragments(af[(kk + 1) & 1], bf[(kk + 1) & 1], sa, sb, lanes, kk + 1);
        }
        if (kk == 0) {
          if (load_next) {
            LoadStage(st, smem + write * kStageBytes, a, b, m0, n0, m_total,
                      kt_begin + it + S::kStages - 1, tid);
          }
          CpAsyncCommit();
        }
        Mma(acc, af[kk & 1], bf[kk & 1]);
      }
      read = next_read;
      write = write + 1 == S::kStages ? 0 : write + 1;
    }
    CpAsyncWait<0>();
  }
};

}  // namespace sm80
}  // namespace jitgemm
