// Small-M GEMM (decode-time linear y = x W^T, M <= 64): the weight operand B
// is streamed from DRAM once, at memory speed; the activations A stay on chip.
//
// Problem: D = act(alpha * A B + beta * C + bias) with A (M x K) any layout,
// B (K x N) column-major (nn.Linear's (N, K) row-major weight, ldb >= K), one
// 16-bit type (bf16 or fp16) for A and B, fp32 accumulation.
//
// Two paths. kBlockK = 32: the register-ring path described below (any
// architecture from sm_80; RingGemm in ring_gemm.cuh, bulk copies of x in
// x_load.cuh). kBlockK = 64 * KS (sm_90a, WgGemm in wgmma_gemm.cuh): x and W
// tiles through shared memory into wgmma, for M > 16.
//
// Work split (all compile-time):
//   * K is cut into 32-wide chunks. A CTA owns kBlockN columns of B (rows of
//     W) and a contiguous slice of kCC = ceil(chunks / kSplitK) chunks;
//     blockIdx = (n tile, K slice, batch).
//   * The CTA's warps form a kWarpsN x kWarpsK grid (kWarpsK is the spec's
//     kWarpsM): warp (wn, wk) owns 16 * kR rows of W (kR = kBlockN / (16 *
//     kWarpsN)) and kCW = ceil(kCC / kWarpsK) chunks of the slice.
//   * Per chunk, thread (g = lane / 4, t = lane % 4) loads 16 bytes of W row
//     g and of row g + 8 at k = 32 c + 8 t: exactly the A fragments of two
//     m16n8k16 tensor-core products once k is permuted inside the chunk (the
//     same permutation is applied to x, so the sum is unchanged). W goes from
//     DRAM to registers with no shared memory; kStages chunks are in flight.
//   * x (kBlockM rows kept on chip) reaches each product's B fragment as one
//     conflict-free 16-byte shared load per thread. When A is row-major with
//     16-byte aligned rows, every warp streams its own x chunks through a
//     kStages-slot cp.async ring issued together with the W loads of the same
//     chunk (no CTA barrier before the main loop; warps with the same K range
//     read x separately, so configs keep kWarpsN small). So does a
//     column-major A of 8-element columns at kBlockM 8, read back with
//     ldmatrix.trans. Otherwise the CTA stages its whole x slice first (other
//     column-major A, odd lda).
//   * The CTA reduces its warps' accumulators in shared memory. With kSplitK
//     > 1 and kSmallMClusterK, the kSplitK CTAs of an n tile are one cluster
//     and meet in distributed shared memory (Traits::kClusterK). Otherwise,
//     with kSplitK > 1, every CTA writes its fp32 partial tile to
//     args.workspace and bumps the tile's arrival counter; the last CTA to
//     arrive sums the partials, applies the epilogue, stores D and resets the
//     counter to zero, so the workspace is clean for the next launch and for
//     graph replays.
//
// Workspace (kSplitK > 1): kCounterBytes of uint32 counters (one per n tile
// and batch, rounded up to 256 bytes), then kTiles * kSplitK * kBlockM *
// kBlockN floats of partials. The plan zeroes it once.
//
// Programmatic dependent launch (kPdl): the kernel prefetches the start of
// its weight slice into L2 (coherent, so legal before the wait) and only then
// waits for the grid it depends on; every global load into registers or
// shared memory and every store follows the wait. Dependents are released once
// the CTA has issued its last weight load (kSmallMTrigger 1, the default):
// released at entry, a co-resident next grid prefetched too early and ran
// about 1 us slower per call on an H100 (measured, 2k x 4k bf16).
//
// Early weights (kSmallMEarlyB, the plan's constant_b promise that no earlier
// work in the stream writes B): the register ring's first kStages chunks are
// loaded before griddepcontrol.wait and dependents are released at entry, so
// the next grid's weights stream while this one computes. With the whole
// slice in the ring (2k x 4k: 16 chunks a warp) an H100 ran 6.3 us per call
// at M = 1 against 7.35 (the L2 prefetch alone). x, which the previous grid
// writes, is still read after the wait, by every CTA at once: with x by
// cp.async the gain shrank with M and turned into a loss from M = 4, which the
// bulk-copy x path (kSmallMXCluster, traits.cuh) mostly wins back.
//
// Gated problems (SwiGLU, GeGLU; GateOf<S>): B holds [W_gate; W_up], 2N rows
// of W; each 16-row tile of W is 8 gate rows and the 8 up rows of the same
// output columns (Traits::WRow), so a CTA's kBlockN rows give kBlockN / 2
// columns of D, reduced like any tile and gated as they are stored
// (StoreGated4), or on the wgmma path in registers. Split-K reduces through
// the workspace (no K clusters).
//
// Any K and any alignment: chunks past K are zero-filled; B rows that are only
// 8/4/2-byte aligned use narrower loads (slower, still correct).
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/small_m/ring_gemm.cuh"
#include "jitgemm/small_m/traits.cuh"
#include "jitgemm/small_m/wgmma_gemm.cuh"

namespace jitgemm {
namespace small_m {

template <class S>
__global__ void __launch_bounds__(S::kThreads, MinBlocksOf<S>::value)
    GemmSmallM(const GemmArgs args) {
  if constexpr (WgOk<S>::value) {
    WgGemm<S>(args);
  } else {
    RingGemm<S>(args);
  }
}

}  // namespace small_m
}  // namespace jitgemm
