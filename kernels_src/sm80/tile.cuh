// Shared-memory tiles of the sm80 family and the global -> shared loader.
//
// One operand's k-tile is stored as kRows rows of kInner 16-bit elements: the
// inner dimension is the one that is contiguous in global memory (K for a
// row-major A, M for a column-major A, ...), so each 16-byte chunk of a row is
// one 16-byte global read. Chunks are XOR-swizzled within a row so that the
// eight row addresses of an ldmatrix (one chunk of eight consecutive rows) and
// the chunks written by eight consecutive threads fall into eight different
// 16-byte bank groups: conflict-free reads and writes with no padding.
#pragma once

#include "jitgemm/common/ptx_sm80.cuh"
#include "jitgemm/common/types.cuh"

namespace jitgemm {
namespace sm80 {

template <int kRows, int kInner>
struct SmemTile {
  static_assert(kInner % 16 == 0 && (kInner & (kInner - 1)) == 0,
                "tile inner extent must be a power of two >= 16");
  static constexpr int kChunks = kInner / 8;  // 16-byte chunks per row
  static constexpr int kRowBytes = kInner * 2;
  static constexpr int kSwizzle = kChunks < 8 ? kChunks : 8;
  static constexpr int kRowDiv = kChunks < 8 ? 8 / kChunks : 1;
  static constexpr int kBytes = kRows * kRowBytes;
  // The XOR pattern repeats every kPeriod rows.
  static constexpr int kPeriod = kRowDiv * kSwizzle;

  static_assert(kPeriod == 8, "swizzle period");

  __device__ __forceinline__ static int Xor(int row) {
    return static_cast<int>((static_cast<unsigned>(row) / kRowDiv) % kSwizzle);
  }
  __device__ __forceinline__ static int Offset(int row, int chunk) {
    return row * kRowBytes + ((chunk ^ Xor(row)) << 4);
  }
  // Offset(row + add, chunk) for a compile-time `add` that is a multiple of 8
  // rows: the XOR pattern of `row` still applies.
  __device__ __forceinline__ static int Offset(int row, int add, int chunk) {
    return (row + add) * kRowBytes + ((chunk ^ Xor(row)) << 4);
  }
};

// Elements of a 16-byte chunk that exist when `left` elements remain from its
// start: 0..8.
__device__ __forceinline__ int ChunkElements(int left) {
  return left < 0 ? 0 : (left > 8 ? 8 : left);
}

// Copies one kRows x kInner tile of a matrix whose rows are kLd elements apart
// into a SmemTile with kThreads threads. Rows at or past `rows_left` and
// elements at or past `inner_left` (counted from the tile origin) are
// zero-filled; the checks compile away when kCheckRows / kCheckInner are false.
// kAlign: byte alignment of every global row start (2, 4, 8 or 16).
//
// Thread t copies chunks t, t + kThreads, ...: when kThreads is a multiple of
// the chunks per row, every copy of a thread is in the same chunk column and
// kRowStep rows apart, so addresses are one base plus constant offsets.
template <class T, int kRows, int kInner, int kThreads, int64 kLd, int kAlign>
struct TileLoader {
  using Tile = SmemTile<kRows, kInner>;
  static constexpr int kChunks = Tile::kChunks;
  static constexpr int kTotal = kRows * kChunks;
  static constexpr int kIters = (kTotal + kThreads - 1) / kThreads;
  static constexpr bool kEven = kTotal % kThreads == 0;
  static constexpr bool kFixedColumn = kThreads % kChunks == 0;
  static constexpr int kRowStep = kThreads / kChunks;  // when kFixedColumn
  static_assert(kAlign == 2 || kAlign == 4 || kAlign == 8 || kAlign == 16, "bad alignment");

  // `tile` points at the tile origin in global memory; `safe` is any valid,
  // kAlign-aligned address (the source of fully zero-filled copies).
  template <bool kCheckRows, bool kCheckInner>
  __device__ __forceinline__ static void Load(unsigned smem, const T* tile, const T* safe,
                                              int rows_left, int inner_left, int tid) {
    if (kFixedColumn) {
      const int row0 = tid / kChunks, chunk = tid % kChunks;
      const T* src0 = tile + static_cast<int64>(row0) * kLd + chunk * 8;
      const unsigned dst0 = smem + Tile::Offset(row0, chunk);
      int valid_inner = 8;
      if (kCheckInner) {
        valid_inner = ChunkElements(inner_left - chunk * 8);
      }
#pragma unroll
      for (int i = 0; i < kIters; ++i) {
        if (!kEven && row0 + i * kRowStep >= kRows) break;
        const int row = row0 + i * kRowStep;
        const unsigned dst = kRowStep % Tile::kPeriod == 0
                                 ? dst0 + i * kRowStep * Tile::kRowBytes
                                 : smem + Tile::Offset(row, chunk);
        const T* src = src0 + static_cast<int64>(i) * kRowStep * kLd;
        const int valid = kCheckRows && row >= rows_left ? 0 : valid_inner;
        Copy<kCheckRows || kCheckInner>(dst, src, safe, valid);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kIters; ++i) {
        const int idx = tid + i * kThreads;
        if (!kEven && idx >= kTotal) break;
        const int row = idx / kChunks, chunk = idx % kChunks;
        const unsigned dst = smem + Tile::Offset(row, chunk);
        const T* src = tile + static_cast<int64>(row) * kLd + chunk * 8;
        int valid = 8;
        if (kCheckInner) {
          valid = ChunkElements(inner_left - chunk * 8);
        }
        if (kCheckRows && row >= rows_left) valid = 0;
        Copy<kCheckRows || kCheckInner>(dst, src, safe, valid);
      }
    }
  }

  // One 16-byte chunk of `valid` (0..8) elements; the rest zero-filled. A
  // partial chunk at the edge of a matrix is read element by element, so no
  // copy ever touches a byte past the matrix.
  template <bool kChecked>
  __device__ __forceinline__ static void Copy(unsigned dst, const T* src, const T* safe,
                                              int valid) {
    if (kAlign == 2 || (kChecked && valid > 0 && valid < 8)) {
      // Plain loads, stored synchronously. The stage being written is not
      // read before the next barrier, exactly as for cp.async.
      const unsigned short* s = reinterpret_cast<const unsigned short*>(src);
      unsigned w[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const unsigned lo = 2 * e < valid ? s[2 * e] : 0u;
        const unsigned hi = 2 * e + 1 < valid ? s[2 * e + 1] : 0u;
        w[e] = lo | (hi << 16);
      }
      StShared128(dst, w[0], w[1], w[2], w[3]);
      return;
    }
    // Here valid is 0 or 8.
    if (kAlign == 16) {
      if (!kChecked) {
        CpAsync16(dst, src);
      } else {
        CpAsync16(dst, valid > 0 ? src : safe, valid > 0 ? 16 : 0);
      }
    } else if (kAlign == 8) {
#pragma unroll
      for (int h = 0; h < 2; ++h) CpAsync8(dst + 8 * h, valid > 0 ? src + 4 * h : safe, valid > 0 ? 8 : 0);
    } else {
#pragma unroll
      for (int h = 0; h < 4; ++h) CpAsync4(dst + 4 * h, valid > 0 ? src + 2 * h : safe, valid > 0 ? 4 : 0);
    }
  }
};

}  // namespace sm80
}  // namespace jitgemm
