// Epilogue of the sm90 family for 16-bit row-major D with 16-byte-aligned
// rows: each consumer warpgroup writes its accumulators, after alpha, beta * C,
// bias and the activation, into 64 x 64 blocks of 128-byte-swizzled shared
// memory with stmatrix, and one thread stores each block with a TMA store.
// Two staging blocks per warpgroup alternate, so computing the next block
// overlaps the store of the last, and the stores of a tile's last blocks
// overlap the next tile's mainloop. TMA clips the stores at the matrix edges.
//
// Accumulator layout of wgmma.m64nNk16 (per thread of the warpgroup):
// d[4j + 2h + e] holds row 16 * warp + lane / 4 + 8h, column 8j + 2 * (lane % 4) + e.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/ptx.cuh"

namespace jitgemm {
namespace sm90 {

template <class S, int kMI, int kBN>
struct TmaStoreEpilogue {
  using D = typename S::ElementD;
  static_assert(sizeof(D) == 2, "TMA-store epilogue: 16-bit D");
  static constexpr int kBlockBytes = 64 * 64 * 2;
  // Shared memory of one consumer warpgroup: two staging blocks.
  static constexpr int kSmemBytes = 2 * kBlockBytes;

  // Value of accumulator `v` at (row, col), or 0 outside the matrix (where
  // C and the bias must not be read and TMA drops the store).
  __device__ __forceinline__ static float Value(const GemmArgs& args, int batch, int row, int col,
                                                float v) {
    if (row >= S::kM || col >= S::kN) return 0.f;
    return EpilogueValue<S>(args, batch, row, col, v);
  }

  // `m0`, `n0`: the warpgroup's first row and column in the batch matrix;
  // `staging`: its kSmemBytes (1024-byte aligned); `bar`: its named barrier.
  __device__ __forceinline__ static void Store(const GemmArgs& args, float (&acc)[kMI][kBN / 2],
                                               int batch, int batch_coord, int m0, int n0,
                                               int thread, const TensorMap* map_d,
                                               unsigned staging, int bar) {
    const int warp = thread >> 5, lane = thread & 31;
    // stmatrix: lane L addresses row L % 8 of matrix L / 8 = (h, j parity).
    const int mat = lane >> 3;
    const int st_row = warp * 16 + (lane & 7) + 8 * (mat & 1);
    const int row_base = m0 + warp * 16 + (lane >> 2);
    const int col_base = n0 + 2 * (lane & 3);
#pragma unroll
    for (int i = 0; i < kMI; ++i) {
#pragma unroll
      for (int cb = 0; cb < kBN / 64; ++cb) {
        const unsigned buf = staging + ((i * (kBN / 64) + cb) & 1) * kBlockBytes;
        // The store issued two blocks ago read this buffer.
        if (thread == 0) BulkWaitRead<1>();
        NamedBarrierSync(bar, 128);
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
          const int j = cb * 8 + 2 * jj;
          unsigned r[4];
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const int jq = j + (q >> 1), h = q & 1;
            const int row = row_base + i * 64 + 8 * h, col = col_base + 8 * jq;
            const float* a = &acc[i][4 * jq + 2 * h];
            r[q] = Pack2<D>(Value(args, batch, row, col, a[0]),
                            Value(args, batch, row, col + 1, a[1]));
          }
          const int chunk = 2 * jj + (mat >> 1);
          const unsigned addr = buf + st_row * 128 + ((chunk ^ (st_row & 7)) << 4);
          StMatrixX4(addr, r[0], r[1], r[2], r[3]);
        }
        FenceProxyAsyncShared();
        NamedBarrierSync(bar, 128);
        if (thread == 0) {
          TmaStore3d(map_d, buf, n0 + cb * 64, m0 + i * 64, batch_coord);
          BulkCommit();
        }
      }
    }
  }
};

}  // namespace sm90
}  // namespace jitgemm
