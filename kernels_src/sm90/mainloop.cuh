// Mainloop of the sm90 family: a kStages-deep ring of shared-memory stages,
// each holding one 64-deep k slice of the A tile (kBM x 64) and the B tile
// (kBN x 64), 128-byte swizzled, filled by TMA and drained by wgmma.
//
// Each stage has a "full" mbarrier (the producer's expect_tx arrival plus the
// bytes TMA lands) and an "empty" one (one arrival per consumer warpgroup that
// reads the stage, in every CTA that reads what this CTA's producer writes).
// Stage and phase come from a running k-slice count shared by producer and
// consumers, so the ring continues across the tiles of the persistent loop.
//
// K-major operands arrive as one box of 64 k x rows; M- or N-major ones as
// 64-element column blocks of 64 k rows each (8 KB), which wgmma reads with
// its transpose bit set. An N-major B tile (or gated tile's half) that is
// not whole 64-column blocks (160 or 224 columns, halves of 96) arrives in
// 32-column blocks (4 KB), 64-byte swizzled. With clusters, the CTAs of one
// cluster share the B tile: each loads 1/kClusterM of it and multicasts it
// to all. A gated tile
// (gate.cuh) takes the first half of its B rows from the gate half of B and
// the second from the up half, at the same output columns.
#pragma once

#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/gate.cuh"
#include "jitgemm/sm90/ptx.cuh"
#include "jitgemm/sm90/tile_scheduler.cuh"
#include "jitgemm/sm90/wgmma.cuh"

namespace jitgemm {
namespace sm90 {

template <class S>
struct Mainloop {
  using T = typename S::ElementA;
  static constexpr int kBM = S::kBlockM, kBN = S::kBlockN, kBK = 64;
  static constexpr bool kGated = GateOf<S>::value != 0;
  static constexpr int kOutBN = OutColumns<S, kBN>::value;  // output columns of a tile
  static constexpr int kStages = S::kStages;
  // Consumer warpgroups sharing one tile (ping-pong: each has its own).
  static constexpr int kConsumers = PingPongOf<S>::value ? 1 : S::kConsumers;
  static constexpr int kClusterM = S::kClusterM;
  static constexpr int kMI = kBM / kConsumers / 64;  // m64 blocks per consumer warpgroup
  static constexpr int kTransA = S::kRowA ? 0 : 1;   // column-major A is M-major
  static constexpr int kTransB = S::kRowB ? 1 : 0;   // row-major B (K x N) is N-major
  static constexpr int kATile = kBM * kBK * 2;
  static constexpr int kBTile = kBN * kBK * 2;
  static constexpr int kStageBytes = kATile + kBTile;
  // The last tile of a K-major A (B) that reaches past M (N) loads through a
  // second tensor map, whose box is only as deep as the rows left, rounded up
  // to the 8-row swizzle atom, because TMA's zero fill of rows past the matrix
  // is slow (docs/kernels.md, "Tiles that reach past M or N"). The stage's
  // rows beyond feed only outputs past M (N), which are never stored. A B tile
  // shared by a cluster or split into gate and up halves keeps its boxes.
  // jit/tensor_maps.cc encodes the same boxes.
  static constexpr int kTilesM = (S::kM + kBM - 1) / kBM;
  static constexpr int kTilesN = (S::kN + kBN - 1) / kBN;
  static constexpr bool kATail = kTransA == 0 && S::kM % kBM != 0;
  static constexpr int kATailRows = (S::kM % kBM + 7) / 8 * 8;
  static constexpr bool kBTail = kTransB == 0 && !kGated && kClusterM == 1 && S::kN % kBN != 0;
  static constexpr int kBTailRows = (S::kN % kBN + 7) / 8 * 8;
  // Tiles of a cluster wholly past M take the tail box too.
  __device__ __forceinline__ static bool ATail(int tm) { return kATail && tm >= kTilesM - 1; }
  __device__ __forceinline__ static bool BTail(int tn) { return kBTail && tn == kTilesN - 1; }
  // Bytes that land on a stage's "full" barrier for tile (tm, tn).
  __device__ __forceinline__ static unsigned LoadBytes(int tm, int tn) {
    return static_cast<unsigned>(((ATail(tm) ? kATailRows : kBM) + (BTail(tn) ? kBTailRows : kBN)) *
                                 kBK * 2);
  }
  static constexpr int kKTiles = (S::kK + kBK - 1) / kBK;
  static constexpr int kBlock = 64 * kBK * 2;  // one 64-element column block, 8 KB
  // Columns and bytes of a block of an N-major B.
  static constexpr int kBCols = kTransB == 1 && (kGated ? kBN / 2 : kBN) % 64 != 0 ? 32 : 64;
  static constexpr int kBBlock = kBCols * kBK * 2;
  static_assert(kBM % (64 * kConsumers) == 0, "each consumer warpgroup takes m64 blocks");
  static_assert(kBN % 32 == 0 && kBN >= 64 && kBN <= 256, "kBlockN: 64 to 256 in steps of 32");
  static_assert(kTransB == 1 || (kBN / kClusterM) % 8 == 0,
                "a K-major B tile must split evenly over the cluster");
  static_assert(!kGated || (kClusterM <= 2 && (kTransB == 0 || (kBN / 2) % 32 == 0)),
                "a gated tile loads each half as whole boxes (column blocks when N-major)");

  // Column of B where row `r` of the B tile of output tile `tn` starts.
  __device__ __forceinline__ static int BColumn(int tn, int r) {
    if constexpr (kGated) {
      return (r < kBN / 2 ? 0 : S::kN - kBN / 2) + tn * kOutBN + r;
    } else {
      return tn * kBN + r;
    }
  }

  // Batch coordinate of an operand: stride-0 operands are one matrix.
  template <long long kStride>
  __device__ __forceinline__ static int BatchCoord(int batch) {
    return kStride == 0 ? 0 : batch;
  }

  // One thread: fills stage `s` with k slice `kt` of tile (tm, tn) of `batch`.
  // `maps` holds a, b, a_tail and b_tail (gemm_tma_wgmma.cuh, TensorMaps).
  template <class Maps>
  __device__ __forceinline__ static void Load(const Maps& maps, unsigned stage, unsigned full,
                                              int kt, int tm, int tn, int batch, unsigned rank) {
    LoadA(maps, stage, full, kt, tm, batch);
    LoadB(maps, stage, full, kt, tn, batch, rank);
  }

  // The A half of Load.
  template <class Maps>
  __device__ __forceinline__ static void LoadA(const Maps& maps, unsigned stage, unsigned full,
                                               int kt, int tm, int batch) {
    const TensorMap* map_a = &maps.a;
    const int ba = BatchCoord<S::kStrideA>(batch);
    const int k0 = kt * kBK;
    if (kTransA == 0) {
      TmaLoad3d(stage, ATail(tm) ? &maps.a_tail : map_a, full, k0, tm * kBM, ba);
    } else {
#pragma unroll
      for (int c = 0; c < kBM / 64; ++c) {
        TmaLoad3d(stage + c * kBlock, map_a, full, tm * kBM + 64 * c, k0, ba);
      }
    }
  }

  // The B half of Load: this CTA's share of the B tile, multicast to the
  // cluster.
  template <class Maps>
  __device__ __forceinline__ static void LoadB(const Maps& maps, unsigned stage, unsigned full,
                                               int kt, int tn, int batch, unsigned rank) {
    const TensorMap* map_b = &maps.b;
    const int bb = BatchCoord<S::kStrideB>(batch);
    const int k0 = kt * kBK;
    const unsigned b_stage = stage + kATile;
    constexpr unsigned short kMask = (1u << kClusterM) - 1;
    if (kTransB == 0 && kGated && kClusterM == 1) {
      // Two boxes of kBN / 2 rows (the tensor map's box), one per half.
      TmaLoad3d(b_stage, map_b, full, k0, BColumn(tn, 0), bb);
      TmaLoad3d(b_stage + kBN / 2 * kBK * 2, map_b, full, k0, BColumn(tn, kBN / 2), bb);
    } else if (kTransB == 0) {
      constexpr int kRows = kBN / kClusterM;
      const unsigned dst = b_stage + rank * kRows * kBK * 2;
      if (kClusterM == 1) {
        TmaLoad3d(dst, BTail(tn) ? &maps.b_tail : map_b, full, k0, BColumn(tn, 0), bb);
      } else {
        TmaLoad3dMulticast(dst, map_b, full, kMask, k0, BColumn(tn, rank * kRows), bb);
      }
    } else {
      // An odd number of blocks splits unevenly: the first CTA loads one more.
      constexpr int kAll = kBN / kBCols;
      constexpr int kBlocks = (kAll + kClusterM - 1) / kClusterM;
#pragma unroll
      for (int j = 0; j < kBlocks; ++j) {
        const int c = rank * kBlocks + j;
        if (kAll % kClusterM != 0 && c >= kAll) break;
        const unsigned dst = b_stage + c * kBBlock;
        if (kClusterM == 1) {
          TmaLoad3d(dst, map_b, full, BColumn(tn, kBCols * c), k0, bb);
        } else {
          TmaLoad3dMulticast(dst, map_b, full, kMask, BColumn(tn, kBCols * c), k0, bb);
        }
      }
    }
  }

  // One consumer warpgroup: issues the wgmmas of one stage for its m64 blocks.
  // `first` overwrites the accumulators instead of adding to them.
  __device__ __forceinline__ static void Mma(float (&acc)[kMI][kBN / 2], unsigned stage,
                                             int consumer, bool first) {
    const unsigned a_base = stage + consumer * kMI * (kTransA == 0 ? 64 * kBK * 2 : kBlock);
    const unsigned b_base = stage + kATile;
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      // K-major: a 16-deep slice is 32 bytes into each 128-byte row; M-/N-major:
      // 16 rows of kBCols * 2 bytes further down each column block.
      constexpr int kRow = kBCols * 2;  // bytes, the span of B's swizzle
      const unsigned long long db =
          kTransB == 0 ? SmemDesc(b_base + kk * 32, 16, 1024)
                       : SmemDesc<kRow>(b_base + kk * 16 * kRow, kBBlock, 8 * kRow);
#pragma unroll
      for (int i = 0; i < kMI; ++i) {
        const unsigned long long da =
            kTransA == 0 ? SmemDesc(a_base + i * 64 * kBK * 2 + kk * 32, 16, 1024)
                         : SmemDesc(a_base + i * kBlock + kk * 16 * 128, kBlock, 1024);
        Wgmma<T, kBN, kTransA, kTransB>::Run(acc[i], da, db, (first && kk == 0) ? 0 : 1);
      }
    }
  }
};

}  // namespace sm90
}  // namespace jitgemm
