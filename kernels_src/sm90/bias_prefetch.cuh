// The bias of one consumer warpgroup's tile, read from global memory before
// the tile's mainloop so that the epilogue never waits on it.
//
// Why: the staged epilogue (epilogue_tma.cuh) interleaves its reads with
// stmatrix and named barriers, which order memory, so a bias read there is one
// global round trip per 8 columns: 16 of them for a 64 x 256 block, several
// microseconds on a tile whose mainloop takes about as long.
//
// Per column (kBias == 1): thread t reads columns t, t + 128, ... of the tile
// into registers; after the mainloop the warpgroup writes them to its
// kSmemBytes of shared memory (16-bit, as stored in the bias vector), where
// the epilogue reads the pair of columns each thread needs. Per row
// (kBias == 2): each thread reads the two rows of each m64 block it stores.
// Gated specs apply their bias in gate.cuh and read nothing here.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/gate.cuh"

namespace jitgemm {
namespace sm90 {

template <class S, int kMI, int kBN>
struct BiasPrefetch {
  // 16-bit D only: an fp32 bias is read in the epilogue's values pass
  // (c_read.cuh), which no barrier or shared-memory store interrupts.
  static constexpr bool kPrefetch =
      S::kTmaStore && sizeof(typename S::ElementD) == 2 && GateOf<S>::value == 0;
  static constexpr bool kColumns = kPrefetch && S::kBias == 1;
  static constexpr bool kRows = kPrefetch && S::kBias == 2;
  static constexpr int kPerThread = (kBN + 127) / 128;
  static constexpr int kSmemBytes = kColumns ? kBN * 2 : 0;

  unsigned short col[kColumns ? kPerThread : 1];
  float row[kRows ? 2 * kMI : 1];

  // Bits of bias element `index` of `batch`, 0 (+0.0) past `limit`.
  __device__ __forceinline__ static unsigned short Bits(const GemmArgs& args, int batch, int index,
                                                        int limit) {
    if (index >= limit) return 0;
    const unsigned short* bias =
        static_cast<const unsigned short*>(args.bias) + static_cast<int64>(batch) * S::kStrideBias;
    return bias[index];
  }

  // `m0`, `n0`: the warpgroup's first row and column in the batch matrix.
  __device__ __forceinline__ void Load(const GemmArgs& args, int batch, int m0, int n0,
                                       int thread) {
    if constexpr (kColumns) {
#pragma unroll
      for (int q = 0; q < kPerThread; ++q) {
        const int c = thread + 128 * q;
        col[q] = c < kBN ? Bits(args, batch, n0 + c, S::kN) : 0;
      }
    }
    if constexpr (kRows) {
      const int row_base = m0 + (thread >> 5) * 16 + ((thread & 31) >> 2);
#pragma unroll
      for (int i = 0; i < kMI; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          typename S::ElementD v;
          v.bits = Bits(args, batch, row_base + i * 64 + 8 * h, S::kM);
          row[2 * i + h] = ToFloat(v);
        }
      }
    }
  }

  // Writes the column biases to `smem` (kSmemBytes); a named barrier of the
  // warpgroup must follow before Column reads them.
  __device__ __forceinline__ void Publish(unsigned smem, int thread) const {
    if constexpr (kColumns) {
#pragma unroll
      for (int q = 0; q < kPerThread; ++q) {
        const int c = thread + 128 * q;
        if (c < kBN) {
          asm volatile("st.shared.u16 [%0], %1;" ::"r"(smem + 2u * c), "h"(col[q]) : "memory");
        }
      }
    }
  }

  // Bias of row 8 * h of this thread's rows in m64 block i; 0 without row biases.
  __device__ __forceinline__ float Row(int i, int h) const {
    if constexpr (kRows) {
      return row[2 * i + h];
    } else {
      return 0.f;
    }
  }

  // Biases of tile columns c and c + 1 (c even).
  __device__ __forceinline__ static void Column(unsigned smem, int c, float (&out)[2]) {
    unsigned pair;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(pair) : "r"(smem + 2u * c) : "memory");
    typename S::ElementD lo, hi;
    lo.bits = static_cast<unsigned short>(pair & 0xffffu);
    hi.bits = static_cast<unsigned short>(pair >> 16);
    out[0] = ToFloat(lo);
    out[1] = ToFloat(hi);
  }
};

}  // namespace sm90
}  // namespace jitgemm
