// Small-M GEMM (decode-time linear y = x W^T, M <= 64): the weight operand B
// is streamed from DRAM once, at memory speed; the activations A stay on chip.
//
// Problem: D = act(alpha * A B + beta * C + bias) with A (M x K) any layout,
// B (K x N) column-major (nn.Linear's (N, K) row-major weight, ldb >= K), one
// 16-bit type (bf16 or fp16) for A and B, fp32 accumulation.
//
// Two paths. kBlockK = 32: the register-ring path described below (any
// architecture from sm_80). kBlockK = 64 * KS (sm_90a, WgGemm further down):
// x and W tiles through shared memory into wgmma, for M > 16.
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
//     read x separately, so configs keep kWarpsN small). Otherwise the CTA
//     stages its whole x slice first (col-major A, odd lda).
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
// bulk-copy x path (kSmallMXCluster, below) mostly wins back.
//
// Any K and any alignment: chunks past K are zero-filled; B rows that are only
// 8/4/2-byte aligned use narrower loads (slower, still correct).
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/small_m/ptx.cuh"

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
//   kSmallMXRing: stream x through a per-warp cp.async ring (needs A row-major,
//     16-byte aligned); otherwise the CTA stages its whole x slice first
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
  static constexpr int kTilesN = (S::kN + kBN - 1) / kBN;
  static constexpr bool kNFull = S::kN % kBN == 0;
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
  static constexpr bool kXRing = !kXMulti && XRingOf<S>::value && S::kRowA &&
                                 (S::kLda * 2) % 16 == 0 &&
                                 (S::kBatch == 1 || (S::kStrideA * 2) % 16 == 0);
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
  static constexpr long long kWeightBytes =
      static_cast<long long>(S::kN) * S::kK * 2 * (S::kStrideB != 0 ? S::kBatch : 1);
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
};

// Stores 4 consecutive columns (n .. n+3) of row m after the epilogue; one
// vector store where D is row-major and aligned, element stores otherwise.
template <class S>
__device__ __forceinline__ void StoreOut4(const GemmArgs& args, int batch, int m, int n,
                                          const float (&v)[4]) {
  using TD = typename S::ElementD;
  constexpr bool kNFull = S::kN % 4 == 0;
  constexpr bool kVec2 = S::kRowD && sizeof(TD) == 2 && S::kAlignD >= 8;
  constexpr bool kVec4 = S::kRowD && sizeof(TD) == 4 && S::kAlignD >= 16;
  auto scalar = [&]() {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (n + j < S::kN) {
        StoreD<S>(args, batch, m, n + j, EpilogueValue<S>(args, batch, m, n + j, v[j]));
      }
    }
  };
  if constexpr (kVec2 || kVec4) {
    if (kNFull || n + 3 < S::kN) {
      float e[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) e[j] = EpilogueValue<S>(args, batch, m, n + j, v[j]);
      TD* d = static_cast<TD*>(args.d) + static_cast<int64>(batch) * S::kStrideD +
              Offset<true, S::kLdd>(m, n);
      if constexpr (kVec2) {
        const unsigned lo = Pack2<TD>(e[0], e[1]);
        const unsigned hi = Pack2<TD>(e[2], e[3]);
        asm volatile("st.global.v2.u32 [%0], {%1,%2};" ::"l"(d), "r"(lo), "r"(hi) : "memory");
      } else {
        StoreF4(reinterpret_cast<float*>(d), e[0], e[1], e[2], e[3]);
      }
    } else {
      scalar();
    }
  } else {
    scalar();
  }
}

// The wgmma path (sm_90a, kBlockK = 64 * KS > 32): one warpgroup computes D
// tile (64 rows of x) x (kBlockN rows of W) with wgmma.m64nNk16, both operands
// from shared memory (K-major, 128-byte swizzle), x and W streamed by cp.async
// through kStages stages of KS 64-wide K atoms, one wgmma group in flight.
// Needs x rows and W rows 16-byte aligned (the host falls back to the
// register-ring path below otherwise, with the same launch shape).
template <class S>
struct WgOk {
  static constexpr bool value =
      S::kBlockK > 32 && S::kBlockK % 64 == 0 && S::kBlockM == 64 && S::kThreads == 128 &&
      (S::kBlockN == 16 || S::kBlockN == 32) && S::kSplitK == 1 && S::kStages >= 3 && S::kRowA &&
      !S::kRowB && (S::kLda * 2) % 16 == 0 &&
      (S::kLdb * 2) % 16 == 0 && S::kAlignA >= 16 && S::kAlignB >= 16 &&
      (S::kBatch == 1 || ((S::kStrideA * 2) % 16 == 0 && (S::kStrideB * 2) % 16 == 0));
};

template <class S>
__device__ __forceinline__ void WgGemm(const GemmArgs& args) {
#if __CUDA_ARCH__ >= 900
  constexpr int KS = S::kBlockK / 64, BN = S::kBlockN, ST = S::kStages;
  constexpr int kK = S::kK, kN = S::kN;
  constexpr int KB = (kK + S::kBlockK - 1) / S::kBlockK;
  constexpr int kAAtom = 64 * 128, kBAtom = BN * 128;
  constexpr int kATile = kAAtom * KS, kStage = (kAAtom + kBAtom) * KS;
  extern __shared__ U4 smem_dyn[];
  const unsigned base = (SmemAddr(smem_dyn) + 1023u) & ~1023u;
  const int tid = threadIdx.x;
  const int n0 = blockIdx.x * BN;
  const int batch = blockIdx.z;
  const int m_rt = S::kM != 0 ? S::kM : CMin(args.m, 64);
  const unsigned short* x =
      static_cast<const unsigned short*>(args.a) + static_cast<int64>(batch) * S::kStrideA;
  const unsigned short* w =
      static_cast<const unsigned short*>(args.b) + static_cast<int64>(batch) * S::kStrideB;

  // No L2 prefetch of the weights before the wait: with it, 2048 x 4096 ran
  // 13.7 us against 9.5 without (H100, kernel harness).
  if (S::kPdl) GridDependencyWait();
  // One 16-byte unit: zero-filled past M, N or K (src-size 0..16 bytes).
  // K a multiple of the stage depth: no K tail to test (the tests cost about
  // 1 us at 2048 x 4096, H100, the loads being on the critical path).
  constexpr bool kKFull = kK % S::kBlockK == 0;
  auto unit = [&](unsigned dst, const unsigned short* row, bool row_ok, int k) {
    const int left = kK - k;
    const unsigned bytes = kKFull               ? (row_ok ? 16u : 0u)
                           : row_ok && left > 0 ? (left >= 8 ? 16u : 2u * left)
                                                : 0u;
    const unsigned short* src = kKFull || bytes != 0u ? row + k : row;
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                 "r"(bytes)
                 : "memory");
  };
  auto load = [&](int kb) {
    const unsigned stage = base + (kb % ST) * kStage;
#pragma unroll
    for (int q = 0; q < KS; ++q) {
      const int k0 = (kb * KS + q) * 64;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int u = tid + i * 128, r = u >> 3, c = u & 7;
        unit(stage + q * kAAtom + r * 128 + ((c ^ (r & 7)) << 4),
             x + static_cast<int64>(r < m_rt ? r : 0) * S::kLda, r < m_rt, k0 + c * 8);
      }
#pragma unroll
      for (int i = 0; i < BN * 8 / 128; ++i) {
        const int u = tid + i * 128, r = u >> 3, c = u & 7;
        const bool ok = S::kN % BN == 0 || n0 + r < kN;
        unit(stage + kATile + q * kBAtom + r * 128 + ((c ^ (r & 7)) << 4),
             w + static_cast<int64>(ok ? n0 + r : 0) * S::kLdb, ok, k0 + c * 8);
      }
    }
  };
  // 128-byte swizzle, K-major: 8-row groups 1024 bytes apart.
  auto desc = [](unsigned addr) {
    return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) | (1ull << 16) |
           (static_cast<unsigned long long>(1024 >> 4) << 32) | (1ull << 62);
  };

  // Prefetch distance ST - 2: one wgmma group stays in flight, so the slot
  // refilled at iteration kb is that of kb - 2.
#pragma unroll
  for (int s = 0; s < ST - 2; ++s) {
    if (s < KB) load(s);
    CpAsyncCommit();
  }
  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
  for (int kb = 0; kb < KB; ++kb) {
    CpAsyncWait<ST - 3>();
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (kb + ST - 2 < KB) load(kb + ST - 2);
    CpAsyncCommit();
    if (S::kPdl && kb + ST - 2 == KB - 1) LaunchDependents();
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    const unsigned stage = base + (kb % ST) * kStage;
#pragma unroll
    for (int q = 0; q < KS; ++q) {
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const unsigned long long da = desc(stage + q * kAAtom + kk * 32);
        const unsigned long long db = desc(stage + kATile + q * kBAtom + kk * 32);
        const int scale = kb > 0 || q > 0 || kk > 0;
        WgMma<typename S::ElementB, BN>(acc, da, db, scale);
      }
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  if (S::kPdl && KB < ST - 1) LaunchDependents();

  // Accumulators: warp w holds rows 16 w + g (+ 8), n8 block j columns 8 j + 2 t (+ 1).
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = 16 * warp + g + 8 * h;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int n = n0 + 8 * j + 2 * t + e;
        if (m < m_rt && (S::kN % BN == 0 || n < kN)) {
          StoreD<S>(args, batch, m, n, EpilogueValue<S>(args, batch, m, n, acc[4 * j + 2 * h + e]));
        }
      }
    }
  }
#endif
}

template <class S>
__device__ __forceinline__ void RingGemm(const GemmArgs& args);

template <class S>
__global__ void __launch_bounds__(S::kThreads, MinBlocksOf<S>::value)
    GemmSmallM(const GemmArgs args) {
  if constexpr (WgOk<S>::value) {
    WgGemm<S>(args);
  } else {
    RingGemm<S>(args);
  }
}

template <class S>
__device__ __forceinline__ void RingGemm(const GemmArgs& args) {
  using Tr = Traits<S>;
  using T = typename Tr::T;
  constexpr int kR = Tr::kR, kMG = Tr::kMG, kMP = Tr::kMP, kBN = Tr::kBN;
  constexpr int kStages = Tr::kStages, kCW = Tr::kCW, kCC = Tr::kCC, kCK = Tr::kCK;
  constexpr int kSplitK = Tr::kSplitK, kWarpsN = Tr::kWarpsN, kWarpsK = Tr::kWarpsK;
  constexpr int kGroup = Tr::kGroup;
  constexpr int kK = S::kK, kN = S::kN;
  constexpr int kHint = LoadHintOf<S>::value;
  constexpr bool kEvict = EvictFirstOf<S>::value;
  constexpr bool kXRing = Tr::kXRing;
  constexpr bool kEarlyB = S::kPdl && EarlyBOf<S>::value;
  // First warp-local chunk the L2 prefetch covers (early mode loads the
  // ring's chunks themselves before the wait).
  constexpr int kPfFrom = kEarlyB ? kStages : 0;
  constexpr bool kTriggerEarly = S::kPdl && TriggerOf<S>::value == 0;
  constexpr bool kTriggerLate = S::kPdl && TriggerOf<S>::value != 0;
  // Chunk whose load issue releases the dependents (kTriggerLate): the last
  // (1), the middle (2) or the end of the first quarter (3) of the warp's chunks.
  constexpr int kTrigAt = TriggerOf<S>::value == 2   ? kCW / 2
                          : TriggerOf<S>::value == 3 ? kCW / 4
                                                     : kCW - 1;

  extern __shared__ U4 smem_dyn[];
  __shared__ unsigned s_last;
  __shared__ unsigned s_sink;  // see kEarlyB below; never read
  __shared__ alignas(8) unsigned long long s_xbar[Tr::kXMulti ? Tr::kXBars : 1];

  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int wn = warp % kWarpsN;
  const int wk = warp / kWarpsN;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int tile_n = blockIdx.x;
  const int cta_k = blockIdx.y;
  const int batch = blockIdx.z;
  // Run-time M never exceeds the rows kept on chip (the plan guarantees it).
  const int m_rt = S::kM != 0 ? S::kM : CMin(args.m, kMP);

  const unsigned short* bmat =
      static_cast<const unsigned short*>(args.b) + static_cast<int64>(batch) * S::kStrideB;
  const unsigned short* abase =
      static_cast<const unsigned short*>(args.a) + static_cast<int64>(batch) * S::kStrideA;
  const int n_warp = tile_n * kBN + wn * 16 * kR;  // first W row of this warp
  const int c_cta = cta_k * kCC;                   // first global chunk of the CTA
  const int c_warp = c_cta + wk * (Tr::kXPieces ? Tr::kXIUnit : kCW);  // warp's first chunk

  // K cluster: rank 0's mbarrier exists before this arrive; every rank waits
  // before its first push into rank 0 (every CTA has started by then).
  __shared__ alignas(8) unsigned long long s_rbar;  // rank 0: the peers' tiles have landed
  if constexpr (Tr::kClusterK) {
    if (cta_k == 0 && tid == 0) MbarInit(SmemAddr(&s_rbar), 1);
    ClusterArrive();
  }
  if constexpr (Tr::kXMulti) {
    // Every CTA's mbarrier exists before any peer multicasts into it.
    if (tid < Tr::kXBars) MbarInit(SmemAddr(&s_xbar[tid]), 1);
    if (Tr::kXCluster > 1) {
      ClusterSync();
    } else {
      __syncthreads();
    }
  }
  if (S::kPdl) {
    if (kTriggerEarly) LaunchDependents();
#if __CUDA_ARCH__ >= 900
    if (!Tr::kXPieces && Tr::kPrefetch > kPfFrom) {
      const int c_end = CMin(CMin(c_warp + Tr::kPrefetch, c_cta + kCC), kCK);
      const int k_begin = (c_warp + kPfFrom) * 32;
      const int k_end = CMin(c_end * 32, kK);
      if (k_end > k_begin) {
        const unsigned bytes = static_cast<unsigned>(k_end - k_begin) * 2u;
        for (int i = lane; i < 16 * kR; i += 32) {
          const int n = n_warp + i;
          if (Tr::kNFull || n < kN) {
            const unsigned short* p = bmat + static_cast<int64>(n) * S::kLdb + k_begin;
            if (S::kAlignB >= 16) {
              if (bytes >= 16) PrefetchBulkL2(p, bytes & ~15u);
            } else {
              const char* pc = reinterpret_cast<const char*>(p);
              for (unsigned off = 0; off < bytes; off += 128) PrefetchL2(pc + off);
              PrefetchL2(pc + bytes - 1);
            }
          }
        }
      }
    }
#endif
    if (!kEarlyB) GridDependencyWait();
  }

  unsigned long long policy = 0;
  if (kEvict) policy = EvictFirstPolicy();

  // Row pointers of the warp's W rows at its first chunk, lane offset included.
  const unsigned short* rowp[kR][2];
  bool rowok[kR][2];
#pragma unroll
  for (int r = 0; r < kR; ++r) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      int n = n_warp + r * 16 + h * 8 + g;
      rowok[r][h] = Tr::kNFull || n < kN;
      if (!rowok[r][h]) n = kN - 1;
      rowp[r][h] = bmat + static_cast<int64>(n) * S::kLdb + c_warp * 32 + t * 8;
    }
  }

  // Chunk c of this warp exists (K and split-K remainders).
  auto chunk_valid = [&](int c) { return Tr::kKEven || (wk * kCW + c < kCC && c_warp + c < kCK); };

  // Loads warp-local chunk c of W into w (zeros outside K and N).
  auto load_w = [&](U4(&w)[kR][2], int c) {
    const int cg = c_warp + Tr::ChunkOff(c);
    const bool valid = chunk_valid(c);
    const bool full = Tr::kKFull || cg < kCK - 1;
#pragma unroll
    for (int r = 0; r < kR; ++r) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (valid && (Tr::kNFull || rowok[r][h])) {
          if (full) {
            w[r][h] = Load8<S::kAlignB, kHint, kEvict>(rowp[r][h] + Tr::ChunkOff(c) * 32, policy);
          } else {
            const int count = kK - (cg * 32 + t * 8);
            if (count >= 8) {
              w[r][h] = Load8<S::kAlignB, kHint, kEvict>(rowp[r][h] + Tr::ChunkOff(c) * 32, policy);
            } else if (count > 0) {
              w[r][h] = Load8Partial(rowp[r][h] + Tr::ChunkOff(c) * 32, count);
            } else {
              w[r][h] = ZeroU4();
            }
          }
        } else {
          w[r][h] = ZeroU4();
        }
      }
    }
  };

  // x ring: slot j of this warp holds, per 8-row group mg, the 16-byte unit
  // each lane reads (row mg * 8 + g, k = 32 c + 8 t). Each lane copies exactly
  // the units it reads, so its own cp.async.wait_group makes them visible.
  // Rows at or past M are zero-filled (cp.async src-size 0, no global read).
  const unsigned xr_addr = SmemAddr(smem_dyn) + (warp * kStages * kMG * 32 + lane) * 16;
  const unsigned short* xsrc[kMG];
  unsigned xbytes[kMG];
#pragma unroll
  for (int mg = 0; mg < kMG; ++mg) {
    const int m = mg * 8 + g;
    xbytes[mg] = m < m_rt ? 16u : 0u;
    xsrc[mg] = abase + static_cast<int64>(m < m_rt ? m : 0) * S::kLda + c_warp * 32 + t * 8;
  }
  auto load_x = [&](int slot, int c) {
    if (!chunk_valid(c)) return;
    const int cg = c_warp + c;
    const bool full = Tr::kKFull || cg < kCK - 1;
#pragma unroll
    for (int mg = 0; mg < kMG; ++mg) {
      if (S::kM != 0 && mg * 8 >= S::kM) continue;  // whole group past an exact M
      const unsigned dst = xr_addr + static_cast<unsigned>((slot * kMG + mg) * 32 * 16);
      const int count = full ? 8 : kK - (cg * 32 + t * 8);
      if (count >= 8) {
        if (S::kAlignA >= 16) {
          CpAsync16Z(dst, xsrc[mg] + c * 32, xbytes[mg]);
        } else {  // pointer below 16-byte alignment: narrow loads, synchronous
          StoreShared16(
              dst, xbytes[mg] != 0u ? Load8<S::kAlignA, 0, false>(xsrc[mg] + c * 32, 0) : ZeroU4());
        }
      } else {
        StoreShared16(
            dst, count > 0 && xbytes[mg] != 0u ? Load8Partial(xsrc[mg] + c * 32, count) : ZeroU4());
      }
    }
  };

  U4 ring[kStages][kR][2];
  auto issue = [&](int j, int c) {
    if (c < kCW) {
      load_w(ring[j], c);
      if (kXRing) load_x(j, c);
    }
    if (kXRing) CpAsyncCommit();  // one group per slot, empty ones included
  };

  if constexpr (kEarlyB) {
    // W does not depend on the previous grid (constant_b): its first chunks
    // stream in while that grid finishes; x and every store wait.
    unsigned sink = 0;
#pragma unroll
    for (int j = 0; j < kStages; ++j) {
      if (j < kCW) {
        load_w(ring[j], j);
#pragma unroll
        for (int r = 0; r < kR; ++r) sink ^= ring[j][r][0].x ^ ring[j][r][1].x;
      }
    }
    // ptxas sinks loads whose results are unused below griddepcontrol.wait
    // (legal, and it saves registers), which would start them only after the
    // previous grid. A shared-memory reduction of their xor keeps them above
    // the wait (an atomic, so racecheck sees no conflicting writes).
    asm volatile("red.shared.xor.b32 [%0], %1;" ::"r"(SmemAddr(&s_sink)), "r"(sink) : "memory");
    GridDependencyWait();
#pragma unroll
    for (int j = 0; j < kStages; ++j) {
      if (kXRing && j < kCW) load_x(j, j);
      if (kXRing) CpAsyncCommit();
    }
  } else {
#pragma unroll
    for (int j = 0; j < kStages; ++j) issue(j, j);
  }
  if (kTriggerLate && kTrigAt < kStages) LaunchDependents();

  if constexpr (Tr::kXMulti) {
    const int rank = Tr::kXCluster > 1 ? static_cast<int>(ClusterRank()) : 0;
    const unsigned short mask = static_cast<unsigned short>((1u << Tr::kXCluster) - 1);
    // Copy q is issued by cluster rank q % C and lands in all C CTAs. Rows at
    // or past M are never read into valid outputs (row m of x only feeds
    // column m of D), so they stay unset.
    auto copy = [&](unsigned dst, const unsigned short* src, unsigned bytes, unsigned bar) {
      if (Tr::kXCluster > 1) {
        BulkCopyMulticast(dst, src, bytes, bar, mask);
      } else {
        BulkCopy(dst, src, bytes, bar);
      }
    };
    if constexpr (Tr::kXPieces) {
      // Every piece p of all rows is issued before piece p + 1.
      constexpr int kPiece = Tr::kXPieceChunks;
      if (tid < Tr::kXParts) {
        MbarArriveExpectTx(SmemAddr(&s_xbar[tid]), static_cast<unsigned>(m_rt) * kPiece * 64);
      }
      for (int q = tid; q < Tr::kXParts * m_rt; q += S::kThreads) {
        const int p = q / m_rt, m = q % m_rt;
        if (m % Tr::kXCluster != rank) continue;
        copy(SmemAddr(smem_dyn) + m * Tr::kXRowBytes + p * kPiece * 64,
             abase + static_cast<int64>(m) * S::kLda + (c_cta + p * kPiece) * 32, kPiece * 64,
             SmemAddr(&s_xbar[p]));
      }
    } else {
      if (tid < kWarpsK) {
        MbarArriveExpectTx(SmemAddr(&s_xbar[tid]), static_cast<unsigned>(m_rt) * kCW * 64);
      }
      for (int q = tid; q < kWarpsK * m_rt; q += S::kThreads) {
        if (q % Tr::kXCluster != rank) continue;
        const int w = q / m_rt, m = q % m_rt;
        copy(SmemAddr(smem_dyn) + (w * kMP + m) * Tr::kXRowBytes,
             abase + static_cast<int64>(m) * S::kLda + (c_cta + w * kCW) * 32, kCW * 64,
             SmemAddr(&s_xbar[w]));
      }
    }
  }

  if (!kXRing && !Tr::kXMulti) {
    // Whole x slice -> shared memory, fragment order: 16-byte unit (chunk cl,
    // row m, quarter t4) lands at ((cl * kMG + m / 8) * 32 + (m % 8) * 4 + t4).
    const unsigned xs_addr = SmemAddr(smem_dyn);
    constexpr int kUnits = Tr::kCCPad * kMP * 4;
    for (int u = tid; u < kUnits; u += S::kThreads) {
      const int t4 = u & 3;
      const int q = u >> 2;
      const int cl = q % Tr::kCCPad;
      const int m = q / Tr::kCCPad;
      if (m >= m_rt) continue;
      const unsigned dst =
          xs_addr + static_cast<unsigned>(((cl * kMG + (m >> 3)) * 32 + (m & 7) * 4 + t4) * 16);
      const int k0 = (c_cta + cl) * 32 + t4 * 8;
      const bool ok = Tr::kKEven || (cl < kCC && k0 < kK);
      if (ok && S::kRowA && S::kAlignA >= 16 && (kK % 8 == 0 || k0 + 8 <= kK)) {
        CpAsync16(dst, abase + static_cast<int64>(m) * S::kLda + k0);
      } else if (ok) {
        unsigned h[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          h[e] = k0 + e < kK ? LoadNc2(abase + Offset<S::kRowA, S::kLda>(m, k0 + e)) : 0u;
        }
        U4 v;
        v.x = h[0] | (h[1] << 16);
        v.y = h[2] | (h[3] << 16);
        v.z = h[4] | (h[5] << 16);
        v.w = h[6] | (h[7] << 16);
        StoreShared16(dst, v);
      } else {
        StoreShared16(dst, ZeroU4());
      }
    }
    CpAsyncWaitAll();
    __syncthreads();
  }

  // kSmallMAccSets 2: the two k16 halves of a chunk feed separate
  // accumulators, halving the dependent mma chain (it is on the critical path
  // once the weights are on chip before x arrives).
  constexpr int kAS = AccSetsOf<S>::value == 2 ? 2 : 1;
  float acc[kR][kMG][4];
  float acc2[kR][kMG][4];
#pragma unroll
  for (int r = 0; r < kR; ++r)
#pragma unroll
    for (int mg = 0; mg < kMG; ++mg)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[r][mg][i] = acc2[r][mg][i] = 0.f;

  const U4* xs_lane =
      kXRing ? smem_dyn + warp * kStages * kMG * 32 + lane : smem_dyn + wk * kCW * kMG * 32 + lane;
  const char* xm_lane = reinterpret_cast<const char*>(smem_dyn) +
                        (Tr::kXPieces ? g * Tr::kXRowBytes + (c_warp - c_cta) * 64
                                      : (wk * kMP + g) * Tr::kXRowBytes) +
                        t * 16;

#pragma unroll Tr::kOuterUnroll
  for (int c0 = 0; c0 < kCW; c0 += kStages) {
#pragma unroll
    for (int j = 0; j < kStages; ++j) {
      const int c = c0 + j;
      if (c < kCW) {
        if (kXRing) CpAsyncWaitN(kStages - 1 - (j % kGroup));
        if constexpr (Tr::kXMulti) {
          if (c % Tr::kXPartChunks == 0) {
            MbarWait(SmemAddr(&s_xbar[Tr::kXPieces ? c / Tr::kXPartChunks : wk]), 0);
          }
        }
        if (chunk_valid(c)) {
          const U4* xc = xs_lane + (kXRing ? j : c) * kMG * 32;
#pragma unroll
          for (int mg = 0; mg < kMG; ++mg) {
            // All kMG groups, also those past a run-time M: branch-free code
            // schedules better, and the plan picks kBlockM close to M.
            const U4 xb = Tr::kXMulti
                              ? *reinterpret_cast<const U4*>(xm_lane + mg * 8 * Tr::kXRowBytes +
                                                             Tr::ChunkOff(c) * 64)
                              : xc[mg * 32];
#pragma unroll
            for (int r = 0; r < kR; ++r) {
              const U4& w0 = ring[j][r][0];
              const U4& w1 = ring[j][r][1];
              Mma16816<T>(acc[r][mg], w0.x, w1.x, w0.y, w1.y, xb.x, xb.y);
              Mma16816<T>(kAS == 2 ? acc2[r][mg] : acc[r][mg], w0.z, w1.z, w0.w, w1.w, xb.z, xb.w);
            }
          }
        }
      }
      if (j % kGroup == kGroup - 1) {
        // Refill the group's slots back to back: each W row gets 64 * kGroup
        // contiguous bytes requested at once.
#pragma unroll
        for (int jj = j - kGroup + 1; jj <= j; ++jj) issue(jj, c0 + jj + kStages);
        const int last = c0 + j + kStages;  // last chunk of this refill
        if (kTriggerLate && last >= kTrigAt && last - kGroup < kTrigAt) LaunchDependents();
      }
    }
  }

  if constexpr (kAS == 2) {
#pragma unroll
    for (int r = 0; r < kR; ++r)
#pragma unroll
      for (int mg = 0; mg < kMG; ++mg)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[r][mg][i] += acc2[r][mg][i];
  }
  // Peers may exit only once every multicast has landed everywhere.
  if constexpr (Tr::kXMulti && Tr::kXCluster > 1) ClusterArrive();

  // Warp accumulators -> shared tile T[wk][m][n_local] (aliases the x buffer).
  __syncthreads();
  float* tsm = reinterpret_cast<float*>(smem_dyn);
  {
    float* tw = tsm + wk * kMP * Tr::kTStride;
#pragma unroll
    for (int r = 0; r < kR; ++r) {
#pragma unroll
      for (int mg = 0; mg < kMG; ++mg) {
        const int nl = wn * 16 * kR + r * 16 + g;
        const int m = mg * 8 + 2 * t;
        tw[m * Tr::kTStride + nl] = acc[r][mg][0];
        tw[(m + 1) * Tr::kTStride + nl] = acc[r][mg][1];
        tw[m * Tr::kTStride + nl + 8] = acc[r][mg][2];
        tw[(m + 1) * Tr::kTStride + nl + 8] = acc[r][mg][3];
      }
    }
  }
  __syncthreads();

  constexpr int kBN4 = kBN / 4;
  const int items = m_rt * kBN4;
  const int n_tile = tile_n * kBN;
  auto tile_sum = [&](int m, int nl, float(&v)[4]) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float s = 0.f;
#pragma unroll
      for (int q = 0; q < kWarpsK; ++q) s += tsm[(q * kMP + m) * Tr::kTStride + nl + j];
      v[j] = s;
    }
  };
  if constexpr (Tr::kClusterK) {
    // One way: ranks 1.. push their reduced tile into rank 0 (st.async,
    // counted on rank 0's mbarrier) and exit at once; rank 0 sums and stores.
    // Nobody waits at a cluster barrier for the slowest rank, so an SM is
    // free for the next grid as soon as its CTA is done: 2048 x 4096 bf16
    // M = 16 ran 6.74-6.78 us against 6.94-7.03 with both ranks exchanging
    // halves behind a cluster barrier (H100, kernel harness).
    ClusterWait();  // rank 0 has started and initialised s_rbar
    const unsigned recv0 = SmemAddr(smem_dyn) + static_cast<unsigned>(Tr::kRecvOff);
    if (cta_k != 0) {
      const unsigned bar = MapaShared(SmemAddr(&s_rbar), 0u);
      const unsigned recv =
          MapaShared(recv0 + static_cast<unsigned>((cta_k - 1) * kMP * kBN * 4), 0u);
      for (int i = tid; i < items; i += S::kThreads) {
        const int m = i / kBN4;
        const int nl = (i % kBN4) * 4;
        float v[4];
        tile_sum(m, nl, v);
        StoreAsyncF4(recv + static_cast<unsigned>((m * kBN + nl) * 4), v, bar);
      }
      return;
    }
    if (tid == 0) {
      MbarArriveExpectTx(SmemAddr(&s_rbar), static_cast<unsigned>((kSplitK - 1) * m_rt * kBN * 4));
    }
    // Rank 0 sums its own warps while the peers' tiles are in flight.
    constexpr int kPer = (kMP * kBN4 + S::kThreads - 1) / S::kThreads;
    float mine[kPer][4];
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const int i = tid + u * S::kThreads;
      if (i < items) tile_sum(i / kBN4, (i % kBN4) * 4, mine[u]);
    }
    MbarWait(SmemAddr(&s_rbar), 0);
    const float* recv_f =
        reinterpret_cast<const float*>(reinterpret_cast<const char*>(smem_dyn) + Tr::kRecvOff);
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const int i = tid + u * S::kThreads;
      if (i >= items) continue;
      const int m = i / kBN4;
      const int nl = (i % kBN4) * 4;
#pragma unroll
      for (int s = 0; s < kSplitK - 1; ++s) {
#pragma unroll
        for (int j = 0; j < 4; ++j) mine[u][j] += recv_f[(s * kMP + m) * kBN + nl + j];
      }
      if (Tr::kNFull || n_tile + nl < kN) StoreOut4<S>(args, batch, m, n_tile + nl, mine[u]);
    }
    return;
  }
  if (kSplitK == 1) {
    for (int i = tid; i < items; i += S::kThreads) {
      const int m = i / kBN4;
      const int nl = (i % kBN4) * 4;
      float v[4];
      tile_sum(m, nl, v);
      if (Tr::kNFull || n_tile + nl < kN) StoreOut4<S>(args, batch, m, n_tile + nl, v);
    }
    if constexpr (Tr::kXMulti && Tr::kXCluster > 1) ClusterWait();
    return;
  }

  // Split-K: partial tile -> workspace; the last CTA of the tile to arrive
  // sums all partials. bar.sync + thread 0's acq_rel atomic order every
  // thread's partial stores before the arrival (release is cumulative).
  unsigned* counters = static_cast<unsigned*>(args.workspace);
  float* parts = reinterpret_cast<float*>(static_cast<char*>(args.workspace) + Tr::kCounterBytes);
  const int tile = batch * Tr::kTilesN + tile_n;
  float* mine = parts + (static_cast<int64>(tile) * kSplitK + cta_k) * (kMP * kBN);
  for (int i = tid; i < items; i += S::kThreads) {
    const int m = i / kBN4;
    const int nl = (i % kBN4) * 4;
    float v[4];
    tile_sum(m, nl, v);
    StoreF4(mine + m * kBN + nl, v[0], v[1], v[2], v[3]);
  }
  __syncthreads();
  if (tid == 0) {
    s_last = AtomicAddAcqRelGpu(counters + tile, 1u) == static_cast<unsigned>(kSplitK - 1);
  }
  __syncthreads();
  if (!s_last) return;

  const float* first = parts + static_cast<int64>(tile) * kSplitK * (kMP * kBN);
  for (int i = tid; i < items; i += S::kThreads) {
    const int m = i / kBN4;
    const int nl = (i % kBN4) * 4;
    float p[kSplitK][4];
#pragma unroll
    for (int s = 0; s < kSplitK; ++s) {
      LoadCg4(first + s * (kMP * kBN) + m * kBN + nl, p[s][0], p[s][1], p[s][2], p[s][3]);
    }
    float v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float sum = 0.f;
#pragma unroll
      for (int s = 0; s < kSplitK; ++s) sum += p[s][j];
      v[j] = sum;
    }
    if (Tr::kNFull || n_tile + nl < kN) StoreOut4<S>(args, batch, m, n_tile + nl, v);
  }
  if (tid == 0) StoreRelaxedGpu(counters + tile, 0u);
}

}  // namespace small_m
}  // namespace jitgemm
