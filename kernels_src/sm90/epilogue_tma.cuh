// Epilogue of the sm90 family for 16-bit row-major D with 16-byte-aligned
// rows: each consumer warpgroup writes its accumulators, after alpha, beta * C,
// bias and the activation, into 64 x 64 blocks of 128-byte-swizzled shared
// memory with stmatrix, and one thread stores each block with a TMA store.
// Two staging blocks per warpgroup alternate, so computing the next block
// overlaps the store of the last, and the stores of a tile's last blocks
// overlap the next tile's mainloop. TMA clips the stores at the matrix edges.
// A gated spec's values arrive finished (gate.cuh) and are stored as they are.
//
// Accumulator layout of wgmma.m64nNk16 (per thread of the warpgroup):
// d[4j + 2h + e] holds row 16 * warp + lane / 4 + 8h, column 8j + 2 * (lane % 4) + e.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/activation.cuh"
#include "jitgemm/sm90/gate.cuh"
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

  // Bias of one row or column, 0 outside the matrix or without a bias on that axis.
  template <int kAxis>
  __device__ __forceinline__ static float Bias(const GemmArgs& args, int batch, int index,
                                               int limit) {
    if (GateOf<S>::value != 0 || S::kBias != kAxis || index >= limit) return 0.f;
    const D* bias = static_cast<const D*>(args.bias) + static_cast<int64>(batch) * S::kStrideBias;
    return ToFloat(bias[index]);
  }

  // alpha * acc + beta * C + bias, activated; 0 outside the matrix (where C
  // must not be read and TMA drops the store anyway).
  __device__ __forceinline__ static float Value(const GemmArgs& args, int batch, int row, int col,
                                                float acc, float bias) {
    if (row >= S::kM || col >= S::kN) return 0.f;
    if (GateOf<S>::value != 0) return acc;
    float v = args.alpha * acc + bias;
    if (S::kHasC) {
      const typename S::ElementC* c = static_cast<const typename S::ElementC*>(args.c) +
                                      static_cast<int64>(batch) * S::kStrideC;
      v += args.beta * ToFloat(c[Offset<S::kRowC, S::kLdc>(row, col)]);
    }
    return ActivateFor16BitD<S::kAct>(v);
  }

  // `m0`, `n0`: the warpgroup's first row and column in the batch matrix;
  // `staging`: its kSmemBytes (1024-byte aligned); `bar`: its named barrier.
  __device__ __forceinline__ static void Store(const GemmArgs& args, float (&acc)[kMI][kBN / 2],
                                               int batch, int batch_coord, int m0, int n0,
                                               int thread, const TensorMap* map_d, unsigned staging,
                                               int bar) {
    const int warp = thread >> 5, lane = thread & 31;
    // stmatrix: lane L addresses row L % 8 of matrix L / 8 = (h, j parity).
    const int mat = lane >> 3;
    const int st_row = warp * 16 + (lane & 7) + 8 * (mat & 1);
    const int row_base = m0 + warp * 16 + (lane >> 2);
    const int col_base = n0 + 2 * (lane & 3);
#pragma unroll
    for (int i = 0; i < kMI; ++i) {
      // Biases are loaded once per row and column a thread touches, not per element.
      const float row_bias[2] = {Bias<2>(args, batch, row_base + i * 64, S::kM),
                                 Bias<2>(args, batch, row_base + i * 64 + 8, S::kM)};
#pragma unroll
      for (int cb = 0; cb < kBN / 64; ++cb) {
        const unsigned buf = staging + ((i * (kBN / 64) + cb) & 1) * kBlockBytes;
        // The store issued two blocks ago read this buffer.
        if (thread == 0) BulkWaitRead<1>();
        NamedBarrierSync(bar, 128);
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
          const int j = cb * 8 + 2 * jj;
          float col_bias[2][2];
#pragma unroll
          for (int x = 0; x < 2; ++x) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              col_bias[x][e] = Bias<1>(args, batch, col_base + 8 * (j + x) + e, S::kN);
            }
          }
          unsigned r[4];
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const int jq = j + (q >> 1), h = q & 1;
            const int row = row_base + i * 64 + 8 * h, col = col_base + 8 * jq;
            const float* a = &acc[i][4 * jq + 2 * h];
            r[q] =
                Pack2<D>(Value(args, batch, row, col, a[0], row_bias[h] + col_bias[q >> 1][0]),
                         Value(args, batch, row, col + 1, a[1], row_bias[h] + col_bias[q >> 1][1]));
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
