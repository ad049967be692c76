// The gated problems of the sm80 family (SwiGLU, GeGLU; docs/gated.md): a
// tile of kBN accumulator columns covers kBN / 2 output columns, taking
// both the gate and the up column of each from B = [B_gate | B_up].
//
// The two halves are interleaved in blocks of 8 columns: tile column c is
// column 8 * (c / 16) + c % 8 of the output tile, from the gate half when
// (c / 8) is even and from the up half (N columns further) when it is odd.
// A warp's N extent is a multiple of 16, so in the mma.sync accumulator
// layout acc[mi][2j] and acc[mi][2j + 1] hold the gate and up values of the
// same output columns in the same thread, and the epilogue pairs them
// without any exchange:
//
//   out = act(alpha * gate + bias[col]) * (alpha * up + bias[N + col])
//
// (GatedValue, common/gate.cuh) and stores it in D's layout as the plain
// epilogue does.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/gate.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm80/epilogue.cuh"
#include "jitgemm/sm80/tile.cuh"

namespace jitgemm {
namespace sm80 {

// Byte alignment of every row start of the up half of a row-major B: the
// rows' own alignment, and the N columns of the gate half before it.
template <class S>
struct UpHalfAlign {
  static constexpr int64 kBytes = S::kN * 2;
  static constexpr int value = kBytes % 16 == 0  ? S::kAlignB
                               : kBytes % 8 == 0 ? (S::kAlignB < 8 ? S::kAlignB : 8)
                               : kBytes % 4 == 0 ? (S::kAlignB < 4 ? S::kAlignB : 4)
                                                 : 2;
};

// Copies one k-tile of the interleaved [gate | up] B into its SmemTile. The
// tile's origin is output column `o0`; `out_left` output columns remain
// (N - o0) and `k_left` rows of K. kKContig: B(k, n) at n * ldb + k (the
// tile's rows are B's columns), else at k * ldb + n (its rows are K).
template <class T, bool kKContig, int kBN, int kBK, int kThreads, int64 kLd, int kAlign,
          int64 kHalf, bool kEdgeInline>
struct GatedBLoader {
  static constexpr int kRows = kKContig ? kBN : kBK;
  static constexpr int kInner = kKContig ? kBK : kBN;
  using Base = TileLoader<T, kRows, kInner, kThreads, kLd, kAlign, kEdgeInline>;
  using Tile = typename Base::Tile;
  static constexpr int kChunks = Tile::kChunks;
  static constexpr int kTotal = kRows * kChunks;
  static constexpr int kIters = (kTotal + kThreads - 1) / kThreads;
  static constexpr bool kEven = kTotal % kThreads == 0;
  // Rows on 2 bytes may be held in registers as in TileLoader.
  using Staged = typename Base::Staged;
  static constexpr int kStagedChunks = Base::kStagedChunks;
  __device__ __forceinline__ static void Store(const Staged& st, int tid) { Base::Store(st, tid); }

  // The output column (from o0) and the half's offset of tile column c.
  __device__ __forceinline__ static int OutColumn(int c) { return ((c >> 4) << 3) + (c & 7); }
  __device__ __forceinline__ static int64 HalfOffset(int c) { return ((c >> 3) & 1) * kHalf; }

  // When every copy of a thread stays in one chunk column, its rows are
  // kRowStep apart; for B's columns as rows, a step of 16 tile columns is 8
  // columns of one half. Addresses are then one base plus constant offsets.
  static constexpr bool kFixedColumn = kThreads % kChunks == 0;
  static constexpr int kRowStep = kFixedColumn ? kThreads / kChunks : 0;
  static constexpr bool kConstantSteps = kFixedColumn && (!kKContig || kRowStep % 16 == 0);

  // b_k0: this batch's B at row k0 of K (column 0); `safe`: any valid address.
  template <bool kCheckN, bool kCheckK, bool kHold>
  __device__ __forceinline__ static void Load(Staged& st, unsigned smem, const T* b_k0,
                                              const T* safe, int o0, int out_left, int k_left,
                                              int tid) {
    if constexpr (kHold && kAlign == 2) {
      auto locate = [&](int i, unsigned& dst, const T*& src, int& left) {
        int row, chunk;
        dst = Base::Place(smem, tid, i, row, chunk);
        left = 8;
        if constexpr (kKContig) {  // row: tile column; chunk: 8 elements of K
          const int out = OutColumn(row);
          src = b_k0 + (static_cast<int64>(o0 + out) + HalfOffset(row)) * kLd + chunk * 8;
          if (kCheckK) left = k_left - chunk * 8;
          if (kCheckN && out >= out_left) left = 0;
        } else {  // row: k; chunk: 8 tile columns, all from one half
          const int out = OutColumn(chunk * 8);
          src = b_k0 + static_cast<int64>(row) * kLd + o0 + out + HalfOffset(chunk * 8);
          if (kCheckN) left = out_left - out;
          if (kCheckK && row >= k_left) left = 0;
        }
      };
      Base::Hold(st, tid, locate);
      return;
    }
    if constexpr (kConstantSteps) {
      const int row0 = tid / kChunks, chunk = tid % kChunks;
      const unsigned dst0 = smem + Tile::Offset(row0, chunk);
      if constexpr (kKContig) {  // row: tile column; chunk: 8 elements of K
        const int out0 = OutColumn(row0);
        const T* src0 = b_k0 + (static_cast<int64>(o0 + out0) + HalfOffset(row0)) * kLd + chunk * 8;
        int valid_k = 8;
        if (kCheckK) {
          valid_k = ChunkElements(k_left - chunk * 8);
        }
#pragma unroll
        for (int i = 0; i < kIters; ++i) {
          if (!kEven && row0 + i * kRowStep >= kRows) break;
          const int out = out0 + i * (kRowStep / 2);
          const unsigned dst = kRowStep % Tile::kPeriod == 0
                                   ? dst0 + i * kRowStep * Tile::kRowBytes
                                   : smem + Tile::Offset(row0 + i * kRowStep, chunk);
          const int valid = kCheckN && out >= out_left ? 0 : valid_k;
          Base::template Copy<kCheckN || kCheckK>(
              dst, src0 + static_cast<int64>(i) * (kRowStep / 2) * kLd, safe, valid);
        }
      } else {  // row: k; chunk: 8 tile columns, all from one half
        const int out = OutColumn(chunk * 8);
        const T* src0 = b_k0 + static_cast<int64>(row0) * kLd + o0 + out + HalfOffset(chunk * 8);
        int valid_n = 8;
        if (kCheckN) {
          valid_n = ChunkElements(out_left - out);
        }
#pragma unroll
        for (int i = 0; i < kIters; ++i) {
          const int row = row0 + i * kRowStep;
          if (!kEven && row >= kRows) break;
          const unsigned dst = kRowStep % Tile::kPeriod == 0 ? dst0 + i * kRowStep * Tile::kRowBytes
                                                             : smem + Tile::Offset(row, chunk);
          const int valid = kCheckK && row >= k_left ? 0 : valid_n;
          Base::template Copy<kCheckN || kCheckK>(
              dst, src0 + static_cast<int64>(i) * kRowStep * kLd, safe, valid);
        }
      }
      return;
    }
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      const int idx = tid + i * kThreads;
      if (!kEven && idx >= kTotal) break;
      const int row = idx / kChunks, chunk = idx % kChunks;
      const unsigned dst = smem + Tile::Offset(row, chunk);
      int valid = 8;
      const T* src;
      if (kKContig) {
        const int out = OutColumn(row);
        src = b_k0 + (static_cast<int64>(o0 + out) + HalfOffset(row)) * kLd + chunk * 8;
        if (kCheckK) {
          valid = ChunkElements(k_left - chunk * 8);
        }
        if (kCheckN && out >= out_left) valid = 0;
      } else {
        const int out = OutColumn(chunk * 8);
        src = b_k0 + static_cast<int64>(row) * kLd + o0 + out + HalfOffset(chunk * 8);
        if (kCheckN) {
          valid = ChunkElements(out_left - out);
        }
        if (kCheckK && row >= k_left) valid = 0;
      }
      Base::template Copy<kCheckN || kCheckK>(dst, src, safe, valid);
    }
  }
};

// Turns a gated tile's accumulators into its output values and stores them,
// one 8-column block at a time so that the accumulators die as they go.
template <class S, int kMI, int kNI>
struct GatedEpilogue {
  using D = typename S::ElementD;
  static_assert(kNI % 2 == 0, "a warp holds gate and up blocks in pairs");
  static_assert(!S::kHasC && S::kBias != 2, "gated problems take no C and no per-row bias");
  static constexpr bool kMFull = S::kM != 0 && S::kM % S::kBlockM == 0;
  static constexpr bool kNFull = S::kN % (S::kBlockN / 2) == 0;
  using Store2 = Epilogue<S, kMI, kNI / 2>;  // only its StorePairAt: D's layout

  // row0 / col0: the warp tile's origin in D (output columns).
  __device__ __forceinline__ static void Store(const GemmArgs& args, float (&acc)[kMI][kNI][4],
                                               int batch, int row0, int col0, int m_total,
                                               int lane) {
    D* d = static_cast<D*>(args.d) + static_cast<int64>(batch) * S::kStrideD;
    const int g = lane >> 2, q = lane & 3;
    // Each store at an immediate offset from the thread's first element (as
    // Epilogue::Store does).
    D* const d_thread = d + Offset<S::kRowD, S::kLdd>(row0 + g, col0 + 2 * q);
#pragma unroll
    for (int j = 0; j < kNI / 2; ++j) {
      const int col = col0 + j * 8 + 2 * q;
      const bool ok0 = kNFull || col < S::kN;
      const bool ok1 = kNFull || col + 1 < S::kN;
      GateBias<S> bias[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        if (e == 0 ? ok0 : ok1) bias[e] = GateBias<S>(args, batch, col + e);
      }
#pragma unroll
      for (int mi = 0; mi < kMI; ++mi) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int dr = mi * 16 + 8 * h;
          const int row = row0 + g + dr;
          if (!kMFull && row >= m_total) continue;
          float v[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            v[e] = GatedValue<S>(args, acc[mi][2 * j][2 * h + e], acc[mi][2 * j + 1][2 * h + e],
                                 bias[e]);
          }
          Store2::StorePairAt(d_thread + Offset<S::kRowD, S::kLdd>(dr, j * 8), ok0, ok1, v[0],
                              v[1]);
        }
      }
    }
  }
};

}  // namespace sm80
}  // namespace jitgemm
