// Epilogue of the sm90 family for 16-bit row-major D with 16-byte-aligned
// rows: each consumer warpgroup writes its accumulators, after alpha, beta * C,
// bias and the activation, into 64 x 64 blocks of 128-byte-swizzled shared
// memory with stmatrix, and one thread stores each block with a TMA store.
// The warpgroup's two staging blocks are filled as a pair behind one proxy
// fence and one barrier, then stored together; the next pair waits for their
// shared-memory reads, and a tile's last pair is stored under the next tile's
// mainloop. TMA clips the stores at the matrix edges, so values outside the
// matrix are computed (from zero-filled operands) but never stored.
// A gated spec's values arrive finished (gate.cuh) and are stored as they are.
//
// Why so few instructions per value and so few barriers: with one warp of
// each consumer warpgroup per scheduler the epilogue is bound by instruction
// issue, and the tensor cores idle while it runs (docs/kernels.md).
//
// Accumulator layout of wgmma.m64nNk16 (per thread of the warpgroup):
// d[4j + 2h + e] holds row 16 * warp + lane / 4 + 8h, column 8j + 2 * (lane % 4) + e.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/activation.cuh"
#include "jitgemm/sm90/bias_prefetch.cuh"
#include "jitgemm/sm90/c_read.cuh"
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

  // alpha * acc + beta * C + bias, activated, with `c` read by CRead. The
  // value outside the matrix is finite (zero-filled operands, a clamped C)
  // and TMA drops its store, so nothing depends on the position: a branch
  // around each value would keep the compiler from interleaving their
  // activations.
  __device__ __forceinline__ static float Value(const GemmArgs& args, float acc, float bias,
                                                float c) {
    if (GateOf<S>::value != 0) return acc;
    float v = args.alpha * acc + bias;
    if (S::kHasC) v += args.beta * c;
    return ActivateFor16BitD<S::kAct>(v);
  }

  // The values of a warpgroup's tile, in place (see Store); C clamped into
  // the matrix only with kClamp.
  template <bool kClamp>
  __device__ __forceinline__ static void Values(const GemmArgs& args, float (&acc)[kMI][kBN / 2],
                                                int batch, int row_base, int col_base, int n0,
                                                const BiasPrefetch<S, kMI, kBN>& bias,
                                                unsigned bias_smem) {
    using Bias = BiasPrefetch<S, kMI, kBN>;
#pragma unroll
    for (int i = 0; i < kMI; ++i) {
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) {
        float col_bias[2] = {0.f, 0.f};
        if constexpr (Bias::kColumns) Bias::Column(bias_smem, col_base - n0 + 8 * j, col_bias);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float row_bias = bias.Row(i, h);
          const int row = row_base + i * 64 + 8 * h, col = col_base + 8 * j;
          float c[2] = {0.f, 0.f};
          if constexpr (S::kHasC)
            CRead<S>::template Pair<kClamp>(args, batch, row, col, c[0], c[1]);
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float& a = acc[i][4 * j + 2 * h + e];
            a = Value(args, a, row_bias + col_bias[e], c[e]);
          }
        }
        // C loads in flight for one 64 x 64 block's worth of values at a time
        // (64 / kMI columns of each row), or ptxas spills.
        if (S::kHasC && j % (8 / kMI) == 8 / kMI - 1) __syncwarp();
      }
    }
  }

  // `m0`, `n0`: the warpgroup's first row and column in the batch matrix;
  // `staging`: its kSmemBytes (1024-byte aligned); `bias`: its biases, read
  // before the mainloop, and `bias_smem` their BiasPrefetch::kSmemBytes;
  // `bar`: its named barrier.
  __device__ __forceinline__ static void Store(const GemmArgs& args, float (&acc)[kMI][kBN / 2],
                                               int batch, int batch_coord, int m0, int n0,
                                               int thread, const TensorMap* map_d, unsigned staging,
                                               const BiasPrefetch<S, kMI, kBN>& bias,
                                               unsigned bias_smem, int bar) {
    using Bias = BiasPrefetch<S, kMI, kBN>;
    const int warp = thread >> 5, lane = thread & 31;
    const int row_base = m0 + warp * 16 + (lane >> 2);
    const int col_base = n0 + 2 * (lane & 3);
    if constexpr (Bias::kColumns) {
      bias.Publish(bias_smem, thread);
      NamedBarrierSync(bar, 128);
    }
    // Every value first, in place, with no barrier or shared-memory store in
    // between: with one warp per scheduler nothing else hides the latency of
    // the activations, so the compiler must be free to interleave all of them.
    if (!S::kHasC || CRead<S>::Inside(m0, 64 * kMI, n0, kBN)) {
      Values<false>(args, acc, batch, row_base, col_base, n0, bias, bias_smem);
    } else {
      Values<true>(args, acc, batch, row_base, col_base, n0, bias, bias_smem);
    }
    // stmatrix: lane L addresses row L % 8 of matrix L / 8 = (h, j parity).
    const int mat = lane >> 3;
    const int st_row = warp * 16 + (lane & 7) + 8 * (mat & 1);
    constexpr int kBlocksN = kBN / 64, kBlocks = kMI * kBlocksN;
#pragma unroll
    for (int b0 = 0; b0 < kBlocks; b0 += 2) {
      // The stores of the previous pair have read both buffers.
      if (thread == 0) BulkWaitRead<0>();
      NamedBarrierSync(bar, 128);
#pragma unroll
      for (int b = b0; b < b0 + 2 && b < kBlocks; ++b) {
        const int i = b / kBlocksN, cb = b % kBlocksN;
        const unsigned buf = staging + (b - b0) * kBlockBytes;
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
          const int j = cb * 8 + 2 * jj;
          unsigned r[4];
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const float* a = &acc[i][4 * (j + (q >> 1)) + 2 * (q & 1)];
            r[q] = Pack2<D>(a[0], a[1]);
          }
          const int chunk = 2 * jj + (mat >> 1);
          StMatrixX4(buf + st_row * 128 + ((chunk ^ (st_row & 7)) << 4), r[0], r[1], r[2], r[3]);
        }
      }
      FenceProxyAsyncShared();
      NamedBarrierSync(bar, 128);
      if (thread == 0) {
#pragma unroll
        for (int b = b0; b < b0 + 2 && b < kBlocks; ++b) {
          TmaStore3d(map_d, staging + (b - b0) * kBlockBytes, n0 + (b % kBlocksN) * 64,
                     m0 + (b / kBlocksN) * 64, batch_coord);
        }
        BulkCommit();
      }
    }
  }
};

}  // namespace sm90
}  // namespace jitgemm
