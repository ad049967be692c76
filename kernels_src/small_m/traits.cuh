// Compile-time shape of a small_m kernel: the optional spec knobs the host
// family writes (with their defaults) and Traits, the derived sizes every
// path of the family shares.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/gate.cuh"
#include "jitgemm/common/types.cuh"

namespace jitgemm {
namespace small_m {

template <class...>
struct MakeVoid {
  using type = void;
};

// Optional spec knobs (the host family writes them; defaults when absent).
//   kSmallMLoadHint: 0, 128 or 256 (L2 fetch size hint on weight loads)
//   kSmallMEvictFirst: weight lines leave L2 first
//   kSmallMPrefetchChunks: chunks per warp prefetched into L2 under PDL (-1: auto)
//   kSmallMMinBlocks: the __launch_bounds__ minimum of CTAs per SM
//   kSmallMGroup: chunks whose loads are issued back to back (divides kStages),
//     so each W row is requested 64 * kSmallMGroup contiguous bytes at a time
//   kSmallMTrigger: 0 launch dependents at entry, 1 once the last W load is issued,
//     2 once the middle chunk's load is issued, 3 once the first quarter's is
//   kSmallMEarlyB: under PDL, the first kStages chunks of W are loaded into
//     registers before griddepcontrol.wait (the plan's constant_b promise: no
//     earlier work in the stream writes B)
//   kSmallMXRing: stream x through a per-warp cp.async ring (needs rows 16
//     bytes apart, or a column-major A of 8-element columns and kBlockM 8);
//     otherwise the CTA stages its whole x slice first
//   kSmallMClusterK: the kSplitK CTAs of an n tile form a cluster along K and
//     reduce through distributed shared memory (sm_90); no workspace
//   kSmallMXParts / kSmallMXInterleave: bulk x arrives in kSmallMXParts pieces
//     along K, each warp owning runs of kSmallMXInterleave chunks (Traits)
//   kSmallMAccSets: 2 gives each k16 half of a chunk its own accumulators
// Name<S>::value is S::Field where the spec defines it, else `fallback`
// (which may use S).
#define JITGEMM_SMALL_M_KNOB(Name, Field, Type, fallback)       \
  template <class S, class = void>                              \
  struct Name {                                                 \
    static constexpr Type value = fallback;                     \
  };                                                            \
  template <class S>                                            \
  struct Name<S, typename MakeVoid<decltype(S::Field)>::type> { \
    static constexpr Type value = S::Field;                     \
  };
JITGEMM_SMALL_M_KNOB(LoadHintOf, kSmallMLoadHint, int, 0)
JITGEMM_SMALL_M_KNOB(EvictFirstOf, kSmallMEvictFirst, bool, false)
JITGEMM_SMALL_M_KNOB(PrefetchChunksOf, kSmallMPrefetchChunks, int, -1)
JITGEMM_SMALL_M_KNOB(MinBlocksOf, kSmallMMinBlocks, int, 1)
JITGEMM_SMALL_M_KNOB(GroupOf, kSmallMGroup, int, S::kStages % 2 == 0 ? 2 : 1)
JITGEMM_SMALL_M_KNOB(TriggerOf, kSmallMTrigger, int, 1)
JITGEMM_SMALL_M_KNOB(UnrollOf, kSmallMUnroll, int, -1)
JITGEMM_SMALL_M_KNOB(EarlyBOf, kSmallMEarlyB, bool, false)
JITGEMM_SMALL_M_KNOB(XClusterOf, kSmallMXCluster, int, 0)
JITGEMM_SMALL_M_KNOB(XRingOf, kSmallMXRing, bool, true)
JITGEMM_SMALL_M_KNOB(ClusterKOf, kSmallMClusterK, bool, false)
JITGEMM_SMALL_M_KNOB(XPartsOf, kSmallMXParts, int, 1)
JITGEMM_SMALL_M_KNOB(AccSetsOf, kSmallMAccSets, int, 1)
JITGEMM_SMALL_M_KNOB(XInterleaveOf, kSmallMXInterleave, int, 0)
#undef JITGEMM_SMALL_M_KNOB

__host__ __device__ constexpr int CMax(int a, int b) { return a > b ? a : b; }
__host__ __device__ constexpr int CMin(int a, int b) { return a < b ? a : b; }

// Derived compile-time shape. jit/families/small_m.cc mirrors kSmemBytes,
// kCounterBytes and the workspace size: keep them in step.
template <class S>
struct Traits {
  using T = typename S::ElementB;
  static constexpr int kMP = S::kBlockM;  // rows of x kept on chip (multiple of 8)
  static constexpr int kMG = kMP / 8;     // 8-row groups: one m16n8k16 N-tile each
  static constexpr int kWarpsN = S::kWarpsN;
  static constexpr int kWarpsK = S::kWarpsM;
  static constexpr int kWarps = kWarpsN * kWarpsK;
  static constexpr int kBN = S::kBlockN;
  static constexpr int kR = kBN / (16 * kWarpsN);  // 16-row tiles of W per warp
  static constexpr int kStages = S::kStages;
  static constexpr int kSplitK = S::kSplitK;
  static constexpr int kCK = (S::kK + 31) / 32;              // chunks along K
  static constexpr int kCC = (kCK + kSplitK - 1) / kSplitK;  // chunks per CTA
  static constexpr int kCW = (kCC + kWarpsK - 1) / kWarpsK;  // chunks per warp
  static constexpr int kCCPad = kCW * kWarpsK;
  // Gated problems (GateOf<S>): W holds 2N rows, [W_gate; W_up], and a
  // 16-row tile of W is 8 gate rows then the 8 up rows of the same outputs,
  // so a CTA's kBN rows of W give kOutBN = kBN / 2 columns of D (WRow).
  static constexpr bool kGated = GateOf<S>::value != 0;
  static constexpr int kOutBN = kGated ? kBN / 2 : kBN;
  static constexpr int kTilesN = (S::kN + kOutBN - 1) / kOutBN;
  static constexpr bool kNFull = S::kN % kOutBN == 0;
  static constexpr bool kKFull = S::kK % 32 == 0;
  // Every warp's chunks exist and are full: no K guard anywhere.
  static constexpr bool kKEven = kKFull && kCK % kSplitK == 0 && kCC % kWarpsK == 0;
  static constexpr int kGroup = GroupOf<S>::value;
  // x path: a per-warp ring of kStages chunk slots filled by cp.async together
  // with the W loads of the same chunk, or the CTA's whole slice staged first.
  // Chosen from the layout alone (rows 16-byte aligned apart), never from the
  // pointer: the host sizes shared memory without knowing pointer alignment.
  // A pointer below 16-byte alignment then takes narrow synchronous loads.
  // x by bulk copy (kSmallMXCluster = C >= 1, sm_90): after the wait, one
  // bulk copy per (warp K range, row) instead of 16-byte cp.async per lane;
  // with C > 1 the C CTAs of a cluster (adjacent n tiles, same K range) each
  // copy a share of the rows and multicast it to all C, so L2 serves each x
  // line to 1/C as many SMs (every CTA reading the same x lines at once is
  // what costs: 2k x 4k at M = 8 ran 8.15 us with the ring, 7.3 with bulk
  // copies, 6.96 multicast in pairs, H100). Rows sit [warp][row][chunk] with
  // a 64-byte pad per row, so the 8 lanes of a 16-byte shared-load phase hit
  // distinct banks. Only where every warp's slice is in the ring at once; the
  // ring path otherwise (the host sizes shared memory for either).
  static constexpr int kXCluster = XClusterOf<S>::value;
  // Split-K inside a cluster (kSmallMClusterK): the kSplitK CTAs of an n tile
  // (cluster dims 1 x kSplitK) each reduce their warps; ranks 1.. push their
  // tile into rank 0's shared memory and exit, rank 0 adds them up and stores
  // (RingGemm's epilogue). Each CTA needs only its K slice of x.
  static constexpr bool kClusterK = ClusterKOf<S>::value && kSplitK > 1;
  static constexpr bool kXMulti = kXCluster >= 1 && kXCluster <= 8 && kCW <= kStages &&
                                  (kSplitK == 1 || (kClusterK && kXCluster == 1)) && kKEven &&
                                  S::kRowA && (S::kLda * 2) % 16 == 0 && S::kAlignA >= 16 &&
                                  S::kBatch == 1 && kTilesN % (kXCluster > 0 ? kXCluster : 1) == 0;
  // x in pieces (bulk x, kSmallMXParts = P > 1 with kSmallMXInterleave = U):
  // warp wk owns runs of U chunks, starting at chunks (wk + j * kWarpsK) * U
  // of the slice, so piece p of a row (chunks [p, p + 1) * kXPieceChunks)
  // holds the next kCW / P chunks of every warp. One bulk copy per (piece,
  // row) and one mbarrier per piece: warps multiply the first piece while the
  // rest of x is in flight. Otherwise one copy per (warp K range, row) and one
  // mbarrier per warp.
  static constexpr int kXParts = XPartsOf<S>::value;
  static constexpr int kXIUnit = XInterleaveOf<S>::value;
  static constexpr bool kXPieces = kXMulti && kXParts > 1 && kXIUnit > 0 && kCW % kXParts == 0 &&
                                   (kCW / kXParts) % kXIUnit == 0;
  static constexpr int kXPartChunks = kXPieces ? kCW / kXParts : kCW;  // warp chunks a piece holds
  static constexpr int kXPieceChunks = kXPartChunks * kWarpsK;
  static constexpr int kXBars = kXPieces ? kXParts : kWarpsK;
  // Offset (in chunks) of warp-local chunk c from the warp's first chunk.
  __host__ __device__ static constexpr int ChunkOff(int c) {
    return kXPieces ? (c / kXIUnit) * kXIUnit * kWarpsK + c % kXIUnit : c;
  }
  // Bytes between x rows: [row][chunk] for pieces, [warp][row][chunk]
  // otherwise; a 64-byte pad keeps 16-byte reads of 8 rows conflict-free.
  static constexpr int kXRowBytes = (kXPieces ? kCCPad : kCW) * 64 + 64;
  // A column-major x of one 8-row group whose columns are exactly 16 bytes
  // apart (a chunk's x is 512 contiguous bytes) rides the same ring
  // transposed: a lane copies one column, and ldmatrix.trans turns a slot
  // into the fragments a row-major x gives (ring_gemm.cuh). With wider
  // columns or more groups, staging the slice measured faster.
  static constexpr bool kXRingAllowed =
      !kXMulti && XRingOf<S>::value && (S::kBatch == 1 || (S::kStrideA * 2) % 16 == 0);
  static constexpr bool kXRingCol = kXRingAllowed && !S::kRowA && kMP == 8 && S::kLda == 8;
  static constexpr bool kXRing =
      kXRingCol || (kXRingAllowed && S::kRowA && (S::kLda * 2) % 16 == 0);
  // (The pieces layout needs less; the host sizes shared memory for either.)
  static constexpr int kXBytes = kXMulti  ? kWarpsK * kMP * (kCW * 64 + 64)
                                 : kXRing ? kWarps * kStages * kMG * 512
                                          : kCCPad * kMG * 512;
  static constexpr int kTStride = kBN + 4;  // floats; conflict-free fragment stores
  static constexpr int kTBytes = kWarpsK * kMP * kTStride * 4;
  // Cluster K: rank 0 receives the other ranks' tiles behind x and the warp
  // tile (peers write them while rank 0 may still be using either).
  static constexpr int kRecvOff = (CMax(kXBytes, kTBytes) + 15) / 16 * 16;
  static constexpr int kRecvBytes = kClusterK ? (kSplitK - 1) * kMP * kBN * 4 : 0;
  static constexpr int kSmemBytes = kRecvOff + kRecvBytes;
  static constexpr int kCounterBytes = (kTilesN * S::kBatch * 4 + 255) / 256 * 256;
  // The ring path keeps the outer loop rolled: unrolled, ptxas materialises
  // every chunk's cp.async addresses (measured: 170 vs 110 registers).
  static constexpr int kOuterUnroll = UnrollOf<S>::value >= 0 ? UnrollOf<S>::value
                                      : kXRing                ? 1
                                      : kCW <= 256            ? (kCW + kStages - 1) / kStages
                                                              : 1;
  // L2 prefetch under PDL: the whole slice when all weights fit in a third of
  // an H100's L2, else the first ~16 MB spread over the grid.
  static constexpr long long kWeightBytes = static_cast<long long>(S::kN) * (kGated ? 2 : 1) *
                                            S::kK * 2 * (S::kStrideB != 0 ? S::kBatch : 1);
  static constexpr int kAutoPrefetch =
      kWeightBytes <= (16ll << 20)
          ? kCW
          : CMax(1, CMin(kCW, static_cast<int>((16ll << 20) /
                                               (static_cast<long long>(kTilesN) * kSplitK *
                                                S::kBatch * kWarps * kR * 1024))));
  static constexpr int kPrefetch =
      PrefetchChunksOf<S>::value >= 0 ? CMin(PrefetchChunksOf<S>::value, kCW) : kAutoPrefetch;

  static_assert(sizeof(typename S::ElementA) == 2 && IsSame<typename S::ElementA, T>::value,
                "small_m: A and B must be the same 16-bit type");
  static_assert(!S::kRowB, "small_m: B must be column-major (W row-major)");
  static_assert(kMP % 8 == 0 && kMP >= 8 && kMP <= 64, "small_m: kBlockM is 8..64, step 8");
  static_assert(S::kM <= kMP, "small_m: kM exceeds kBlockM");
  static_assert(kR >= 1 && kBN == 16 * kR * kWarpsN, "small_m: kBlockN = 16 * kR * kWarpsN");
  static_assert(S::kThreads == 32 * kWarps, "small_m: kThreads = 32 * kWarpsN * kWarpsM");
  static_assert(kStages >= 1 && kStages <= 16, "small_m: kStages is 1..16");
  static_assert(kGroup >= 1 && kStages % kGroup == 0, "small_m: kSmallMGroup divides kStages");
  static_assert(!kClusterK || (kSplitK <= 8 && kXCluster <= 1),
                "small_m: a K cluster has 2..8 CTAs and no x multicast");
  static_assert(!kGated || !kClusterK, "small_m: a gated tile reduces through the workspace");

  // The row of W (column of B) behind row `nl` of n tile `tile`'s kBN rows,
  // and whether its output column exists.
  __device__ __forceinline__ static int WRow(int tile, int nl, bool& ok) {
    if constexpr (kGated) {
      const int out = tile * kOutBN + ((nl >> 4) << 3) + (nl & 7);
      ok = kNFull || out < S::kN;
      return out + ((nl >> 3) & 1) * S::kN;
    } else {
      const int n = tile * kBN + nl;
      ok = kNFull || n < S::kN;
      return n;
    }
  }
};

}  // namespace small_m
}  // namespace jitgemm
