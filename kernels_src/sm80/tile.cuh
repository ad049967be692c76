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
//
// Rows that start on 2 bytes are out of cp.async's reach (4 bytes at least).
// Copied one chunk at a time, each chunk waits a full memory latency before
// it is stored. Where the main loop has registers to spare (kHold), Load
// only reads every chunk of the tile into registers and Store, called after
// the k tile's MMAs, writes them: one latency a k tile, overlapped.
//
// kEdgeInline (rows on 4 bytes or more): a partial chunk takes the same
// predicated copies as a whole one, with sizes computed per part; else it
// takes a branch of its own, which costs the main loop's scheduling but keeps
// the sizes out of its registers (Mainloop decides).
template <class T, int kRows, int kInner, int kThreads, int64 kLd, int kAlign, bool kEdgeInline>
struct TileLoader {
  using Tile = SmemTile<kRows, kInner>;
  static constexpr int kChunks = Tile::kChunks;
  static constexpr int kTotal = kRows * kChunks;
  static constexpr int kIters = (kTotal + kThreads - 1) / kThreads;
  static constexpr bool kEven = kTotal % kThreads == 0;
  static constexpr bool kFixedColumn = kThreads % kChunks == 0;
  static constexpr int kRowStep = kThreads / kChunks;  // when kFixedColumn
  static_assert(kAlign == 2 || kAlign == 4 || kAlign == 8 || kAlign == 16, "bad alignment");
  static constexpr int kStagedChunks = kAlign == 2 ? kIters : 0;  // per thread, when held

  // A thread's held chunks, as read (put together only when stored, so that
  // nothing waits for the reads earlier), and their shared-memory addresses.
  struct Staged {
    unsigned x[kIters][5];
    bool odd[kIters];
    unsigned dst[kIters];
  };

  // `tile` points at the tile origin in global memory; `safe` is any valid,
  // kAlign-aligned address (the source of fully zero-filled copies).
  template <bool kCheckRows, bool kCheckInner, bool kHold>
  __device__ __forceinline__ static void Load(Staged& st, unsigned smem, const T* tile,
                                              const T* safe, int rows_left, int inner_left,
                                              int tid) {
    if constexpr (kHold && kAlign == 2) {
      auto locate = [&](int i, unsigned& dst, const T*& src, int& left) {
        int row, chunk;
        dst = Place(smem, tid, i, row, chunk);
        src = tile + static_cast<int64>(row) * kLd + chunk * 8;
        left = kCheckInner ? inner_left - chunk * 8 : 8;
        if (kCheckRows && row >= rows_left) left = 0;
      };
      Hold(st, tid, locate);
    } else if (kFixedColumn) {
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
        const unsigned dst = kRowStep % Tile::kPeriod == 0 ? dst0 + i * kRowStep * Tile::kRowBytes
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

  // The row and chunk of this thread's chunk i when chunks are dealt out in
  // order (thread t: chunks t, t + kThreads, ...); returns its shared address.
  __device__ __forceinline__ static unsigned Place(unsigned smem, int tid, int i, int& row,
                                                   int& chunk) {
    const int idx = tid + i * kThreads;
    row = idx / kChunks;
    chunk = idx % kChunks;
    return smem + Tile::Offset(row, chunk);
  }

  // Reads every chunk of this thread into `st` (rows on 2 bytes, held);
  // locate(i, dst, src, left) gives the shared address, the global address
  // and the elements that exist from the start of its chunk i (8 or more:
  // all of it; may be negative).
  template <class Locate>
  __device__ __forceinline__ static void Hold(Staged& st, int tid, const Locate& locate) {
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      if (!kEven && tid + i * kThreads >= kTotal) break;
      int left;
      const T* src;
      locate(i, st.dst[i], src, left);
      Read(st.x[i], st.odd[i], src, left);
    }
  }

  // Writes the chunks a held Load read (nothing for rows on 4 bytes or more:
  // cp.async copied them).
  __device__ __forceinline__ static void Store(const Staged& st, int tid) {
    if constexpr (kAlign != 2) return;
#pragma unroll
    for (int i = 0; i < kIters; ++i) {
      if (!kEven && tid + i * kThreads >= kTotal) break;
      const unsigned(&x)[5] = st.x[i];
      if (st.odd[i]) {
        StShared128(st.dst[i], Prmt(x[0], x[1], 0x5410), Prmt(x[1], x[2], 0x5432),
                    Prmt(x[2], x[3], 0x5432), Prmt(x[3], x[4], 0x5432));
      } else {
        StShared128(st.dst[i], x[0], x[1], x[2], x[3]);
      }
    }
  }

  // Bytes of (b:a) picked by `sel`. In asm, so that the compiler cannot move
  // the work onto the reads' side of the MMAs, where it would wait for them.
  __device__ __forceinline__ static unsigned Prmt(unsigned a, unsigned b, unsigned sel) {
    unsigned r;
    asm volatile("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
    return r;
  }

  // Reads a chunk at `src` (2-byte aligned) of which `left` elements exist
  // into x. A whole chunk is read mostly in 4-byte words: on 4 bytes, x[0..3]
  // are its words; else (odd) x[0] and x[4] are its first and last elements
  // and x[1..3] the words between. A partial chunk, only at the edge of a
  // matrix, is read element by element, so no read ever touches a byte past
  // the matrix. `left` is tested unclamped: with the count clamped to 0..8
  // first, the sm_90a code branched on the predicate of the one VIMNMX.RELU
  // that clamps, and chunks wholly past the edge were read by words (wrong
  // results on the H100; docs/kernels.md).
  __device__ __forceinline__ static void Read(unsigned (&x)[5], bool& odd, const T* src, int left) {
    const unsigned short* s = reinterpret_cast<const unsigned short*>(src);
    if (left >= 8) {
      odd = (reinterpret_cast<unsigned long long>(src) & 2) != 0;
      const unsigned* w = reinterpret_cast<const unsigned*>(s + (odd ? 1 : 2));
      x[1] = w[0];
      x[2] = w[1];
      x[3] = w[2];
      if (odd) {
        x[0] = s[0];
        x[4] = s[7];
      } else {
        x[0] = *reinterpret_cast<const unsigned*>(s);
        x[4] = 0u;
      }
    } else {
      odd = false;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const unsigned lo = 2 * j < left ? s[2 * j] : 0u;
        const unsigned hi = 2 * j + 1 < left ? s[2 * j + 1] : 0u;
        x[j] = lo | (hi << 16);
      }
      x[4] = 0u;
    }
  }

  // One 16-byte chunk of `valid` (0..8) elements; the rest zero-filled. A
  // partial chunk at the edge of a matrix is copied with a source size of
  // only its elements, so no copy reads a byte past the matrix and none
  // waits: read synchronously, every k tile of an edge block paid a memory
  // latency per chunk (docs/kernels.md, "The sm80 family's edge chunks").
  template <bool kChecked>
  __device__ __forceinline__ static void Copy(unsigned dst, const T* src, const T* safe,
                                              int valid) {
    constexpr int kParts = 16 / kAlign, kPer = kAlign / 2;
    if constexpr (kAlign == 2) {
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
    } else if constexpr (!kChecked) {
      if constexpr (kAlign == 16) {
        CpAsync16(dst, src);
      } else {
#pragma unroll
        for (int h = 0; h < kParts; ++h) CopyPart(dst + kAlign * h, src + kPer * h, kAlign);
      }
    } else if constexpr (kEdgeInline) {
      // Each part takes the elements of it that exist; one with none reads
      // nothing, from `safe`. The sizes are worked out in asm, next to their
      // copies: computed once, outside the main loop, they held registers
      // for all of it.
#pragma unroll
      for (int h = 0; h < kParts; ++h) {
        const int bytes = PartBytes(valid, kPer * h);
        CopyPart(dst + kAlign * h, bytes > 0 ? src + kPer * h : safe, bytes);
      }
    } else if (valid > 0 && valid < 8) {
#pragma unroll
      for (int h = 0; h < kParts; ++h) {
        CopyPart(dst + kAlign * h, src + kPer * h, min(max(2 * valid - kAlign * h, 0), kAlign));
      }
    } else {
#pragma unroll
      for (int h = 0; h < kParts; ++h) {
        CopyPart(dst + kAlign * h, valid > 0 ? src + kPer * h : safe, valid > 0 ? kAlign : 0);
      }
    }
  }

  // Bytes of a part whose first element is element `first` of a chunk of
  // `valid`: 2 (valid - first), clamped to 0..kAlign.
  __device__ __forceinline__ static int PartBytes(int valid, int first) {
    int bytes;
    asm volatile(
        "{ .reg .s32 t; sub.s32 t, %1, %2; shl.b32 t, t, 1; max.s32 t, t, 0; min.s32 %0, t, %3; }"
        : "=r"(bytes)
        : "r"(valid), "r"(first), "n"(kAlign));
    return bytes;
  }

  // One cp.async of kAlign bytes of which `bytes` are read.
  __device__ __forceinline__ static void CopyPart(unsigned dst, const T* src, int bytes) {
    if constexpr (kAlign == 16) {
      CpAsync16(dst, src, static_cast<unsigned>(bytes));
    } else if constexpr (kAlign == 8) {
      CpAsync8(dst, src, bytes);
    } else {
      CpAsync4(dst, src, bytes);
    }
  }
};

}  // namespace sm80
}  // namespace jitgemm
