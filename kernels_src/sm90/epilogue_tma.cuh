// Epilogue of the sm90 family for row-major D with 16-byte-aligned rows (16-bit
// or fp32): each consumer warpgroup writes its accumulators, after alpha,
// beta * C, bias and the activation, into blocks of 64 rows x 128 bytes of
// 128-byte-swizzled shared memory (64 columns of 16-bit D with stmatrix, 32 of
// fp32 with 8-byte stores), and one thread stores each block with a TMA store.
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
  static constexpr bool kHalfD = sizeof(D) == 2;
  static_assert(sizeof(D) == 2 || sizeof(D) == 4, "TMA-store epilogue: 16-bit or fp32 D");
  // A staging block: 64 rows of 128 bytes, the TMA store's box.
  static constexpr int kBlockBytes = 64 * 128;
  static constexpr int kBlockCols = 128 / static_cast<int>(sizeof(D));
  // Biases not prefetched into shared memory (fp32 D) are read with C.
  static constexpr bool kBiasRead =
      S::kBias != 0 && !BiasPrefetch<S, kMI, kBN>::kPrefetch && GateOf<S>::value == 0;
  static constexpr bool kReads = S::kHasC || kBiasRead;
  // Values in flight bounded for a transcendental activation too: always
  // with fp32 D, and with 16-bit D in tiles of 128 accumulators a thread,
  // whose values are also computed a staging pair at a time (Store) unless
  // they read C (or a bias) into one m64 block: a pair's reads would then
  // wait behind the previous pair's barrier, and with one m64 block nothing
  // spilled without pairs.
  static constexpr bool kTranscendental = S::kAct >= 2 && S::kAct <= 4;
  static constexpr bool kBoundAct = kTranscendental && (!kHalfD || kMI * kBN / 2 >= 128);
  static constexpr bool kValuesByPair = kBoundAct && kHalfD && (!kReads || kMI == 2);
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
    if constexpr (kHalfD) {
      return ActivateFor16BitD<S::kAct>(v);
    } else {
      return ActivateFor<float, S::kAct>(v);
    }
  }

  // A tile's column blocks; where kBN is not a multiple of kBlockCols the
  // last one starts kBlockCols before the tile's end and overlaps the one
  // before it, whose columns it stores again with the same values.
  static constexpr int kBlocksN = (kBN + kBlockCols - 1) / kBlockCols;
  __device__ __forceinline__ static constexpr int BlockColumn(int cb) {
    return cb * kBlockCols < kBN - kBlockCols ? cb * kBlockCols : kBN - kBlockCols;
  }

  static constexpr int kBlocks = kMI * kBlocksN;
  // The first n8 column group of block cb that no block before it in its row
  // holds, and the end of the block.
  __device__ __forceinline__ static constexpr int FirstNewGroup(int cb) {
    return cb == 0 ? 0 : (BlockColumn(cb - 1) + kBlockCols) / 8;
  }
  __device__ __forceinline__ static constexpr int EndGroup(int cb) {
    return (BlockColumn(cb) + kBlockCols) / 8;
  }

  // The values of blocks [b_lo, b_hi) of a warpgroup's tile, each once, in
  // place (see Store); C clamped into the matrix only with kClamp.
  template <bool kClamp>
  __device__ __forceinline__ static void Values(const GemmArgs& args, float (&acc)[kMI][kBN / 2],
                                                int batch, int row_base, int col_base, int n0,
                                                const BiasPrefetch<S, kMI, kBN>& bias,
                                                unsigned bias_smem, int b_lo, int b_hi) {
    using Bias = BiasPrefetch<S, kMI, kBN>;
#pragma unroll
    for (int b = b_lo; b < b_hi; ++b) {
      const int i = b / kBlocksN, cb = b % kBlocksN;
#pragma unroll
      for (int j = FirstNewGroup(cb); j < EndGroup(cb); ++j) {
        float col_bias[2] = {0.f, 0.f};
        if constexpr (Bias::kColumns) Bias::Column(bias_smem, col_base - n0 + 8 * j, col_bias);
        if constexpr (kBiasRead && S::kBias == 1) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            col_bias[e] = CRead<S>::template Bias<kClamp>(args, batch, 0, col_base + 8 * j + e);
          }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = row_base + i * 64 + 8 * h, col = col_base + 8 * j;
          float row_bias = bias.Row(i, h);
          if constexpr (kBiasRead && S::kBias == 2) {
            row_bias = CRead<S>::template Bias<kClamp>(args, batch, row, 0);
          }
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
        // (64 / kMI columns of each row), for 16-bit D half that where they
        // are clamped (an address each) or the values go by pair, or ptxas
        // spills.
        constexpr int kGroup = ((kClamp || kValuesByPair) && kHalfD ? 4 : 8) / kMI;
        if ((kReads || kBoundAct) && j % kGroup == kGroup - 1) __syncwarp();
      }
    }
  }

  // 16-bit D: columns [BlockColumn(cb), + 64) of one m64 block into a staging
  // block by stmatrix; lane L addresses row L % 8 of matrix L / 8 = (h, j
  // parity).
  __device__ __forceinline__ static void WriteHalfBlock(const float (&acc)[kBN / 2], int cb,
                                                        unsigned buf, int st_row, int mat) {
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      const int j = BlockColumn(cb) / 8 + 2 * jj;
      unsigned r[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float* a = &acc[4 * (j + (q >> 1)) + 2 * (q & 1)];
        r[q] = Pack2<D>(a[0], a[1]);
      }
      const int chunk = 2 * jj + (mat >> 1);
      StMatrixX4(buf + st_row * 128 + ((chunk ^ (st_row & 7)) << 4), r[0], r[1], r[2], r[3]);
    }
  }

  // fp32 D: columns [BlockColumn(cb), + 32) of one m64 block into a staging block,
  // each thread's two adjacent columns as one 8-byte store. The 128-byte
  // swizzle puts a warp's 8 rows x 32 bytes on every bank exactly twice: two
  // wavefronts, the least 256 bytes take.
  __device__ __forceinline__ static void WriteFp32Block(const float (&acc)[kBN / 2], int cb,
                                                        unsigned buf, int warp, int lane) {
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      const int j = BlockColumn(cb) / 8 + jj;
      const int chunk = 2 * jj + ((lane & 3) >> 1);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = warp * 16 + (lane >> 2) + 8 * h;
        const unsigned addr = buf + row * 128 + ((chunk ^ (row & 7)) << 4) + (lane & 1) * 8;
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(acc[4 * j + 2 * h]),
                     "f"(acc[4 * j + 2 * h + 1])
                     : "memory");
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
    const bool inside = !kReads || CRead<S>::Inside(m0, 64 * kMI, n0, kBN);
    auto values = [&](int b_lo, int b_hi) {
      if (inside) {
        Values<false>(args, acc, batch, row_base, col_base, n0, bias, bias_smem, b_lo, b_hi);
      } else {
        Values<true>(args, acc, batch, row_base, col_base, n0, bias, bias_smem, b_lo, b_hi);
      }
    };
    // Every value first, in place, with no barrier or shared-memory store in
    // between: with one warp per scheduler nothing else hides the latency of
    // the activations, so the compiler must be free to interleave all of them.
    // Except a transcendental activation of 128 accumulators a thread into
    // 16-bit D: ptxas then left the last values' products for after the
    // staging barrier, live beside the stmatrix addresses, and spilled; a
    // pair's values are computed before its own barrier, the later ones
    // while the earlier pairs' stores run.
    if constexpr (!kValuesByPair) values(0, kBlocks);
    const int mat = lane >> 3;
    const int st_row = warp * 16 + (lane & 7) + 8 * (mat & 1);
#pragma unroll
    for (int b0 = 0; b0 < kBlocks; b0 += 2) {
      if constexpr (kValuesByPair) values(b0, b0 + 2 < kBlocks ? b0 + 2 : kBlocks);
      // The stores of the previous pair have read both buffers.
      if (thread == 0) BulkWaitRead<0>();
      NamedBarrierSync(bar, 128);
#pragma unroll
      for (int b = b0; b < b0 + 2 && b < kBlocks; ++b) {
        const int i = b / kBlocksN, cb = b % kBlocksN;
        const unsigned buf = staging + (b - b0) * kBlockBytes;
        if constexpr (kHalfD) {
          WriteHalfBlock(acc[i], cb, buf, st_row, mat);
        } else {
          WriteFp32Block(acc[i], cb, buf, warp, lane);
        }
      }
      FenceProxyAsyncShared();
      NamedBarrierSync(bar, 128);
      if (thread == 0) {
#pragma unroll
        for (int b = b0; b < b0 + 2 && b < kBlocks; ++b) {
          TmaStore3d(map_d, staging + (b - b0) * kBlockBytes, n0 + BlockColumn(b % kBlocksN),
                     m0 + (b / kBlocksN) * 64, batch_coord);
        }
        BulkCommit();
      }
    }
  }
};

}  // namespace sm90
}  // namespace jitgemm
