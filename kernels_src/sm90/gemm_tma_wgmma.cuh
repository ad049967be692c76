// sm90 GEMM (sm_90a only): TMA loads into 128-byte-swizzled shared memory on
// an mbarrier ring, wgmma.m64nNk16 (N = kBlockN up to 256), one producer
// warpgroup and kConsumers consumer warpgroups with registers moved to them
// by setmaxnreg (sharing each tile, or ping-pong on alternate tiles),
// persistent CTAs over a grouped tile schedule, optional
// clusters of kClusterM CTAs along M sharing the B tile by TMA multicast, and
// the fused epilogue stored by TMA through shared memory (epilogue_tma.cuh) or
// from registers (epilogue.cuh).
//
// Spec (kernels_src/common/args.cuh) fields used beyond the common ones:
//   kBlockM x kBlockN       tile; kBlockM = 64 * kConsumers * (1 or 2), kBlockN 64..256 in
//                           steps of 64 (of 32 with a K-major B)
//   kStages                 shared-memory ring depth
//   kConsumers              consumer warpgroups (1 or 2); kThreads == 128 * (1 + kConsumers)
//   kClusterM               CTAs per cluster along M (1 or 2)
//   kGroupM                 unit rows per raster group (L2 reuse)
//   kTmaStore               D leaves through shared memory and TMA stores
//                           (16-bit or fp32 row-major D, 16-byte-aligned rows,
//                           N a multiple of 16 bytes)
//   kSplitK                 work items per tile along K, reduced through the
//                           workspace (split_k.cuh)
//   kSplitUnits (optional)  only the last kSplitUnits units are split
//                           (tile_scheduler.cuh); default all
//   kSplitCluster (optional) true: kSplitK == 2 and the two splits of a unit
//                           run in one cluster of 2 along x, reduced through
//                           distributed shared memory (split_cluster.cuh)
//   kGate (optional)        1: B is K x 2N [gate | up] and D = act(gate) * up
//                           (gate.cuh); a tile then covers kBlockN / 2 columns of D
//   kEarlyB (optional)      true (with kPdl): no earlier kernel on the stream
//                           writes B (Options::constant_b), so the producer
//                           loads the B tiles of the first (up to 4) k slices
//                           before waiting for the previous grid
//   kPingPong (optional)    true: two consumer warpgroups take alternate tiles,
//                           kBlockM = 64 * (1 or 2) each (tile_scheduler.cuh);
//                           no split-K
// Parameters: GemmArgs, then the tensor maps of A, B and D and the last M and N
// tiles' boxes of A and B (jit/tensor_maps.cc encodes them: 3-D, dims
// (contiguous, strided, batch), 64-element-wide boxes).
// Launch: grid (CTAs, 1, 1) with CTAs a multiple of kClusterM and at most the
// SM count, cluster (kClusterM, 1, 1), dynamic shared memory
// Sm90Smem<S>::kBytes.
//
// fp16 or bf16 A and B, fp32 accumulation, any D type. Any M, N, K: the
// tensor maps zero-fill reads past the edges, stores are bounds-checked.
// Rows of A and B must start 16-byte aligned (TMA).
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/bias_prefetch.cuh"
#include "jitgemm/sm90/epilogue.cuh"
#include "jitgemm/sm90/epilogue_tma.cuh"
#include "jitgemm/sm90/gate.cuh"
#include "jitgemm/sm90/mainloop.cuh"
#include "jitgemm/sm90/ptx.cuh"
#include "jitgemm/sm90/split_cluster.cuh"
#include "jitgemm/sm90/split_k.cuh"
#include "jitgemm/sm90/tile_scheduler.cuh"

namespace jitgemm {
namespace sm90 {

struct TensorMaps {
  TensorMap a;
  TensorMap b;
  TensorMap d;       // used only with kTmaStore
  TensorMap a_tail;  // the last M tile's box (Mainloop::kATail), else unused
  TensorMap b_tail;  // the last N tile's box (Mainloop::kBTail), else unused
};

template <class S>
struct Sm90Smem {
  using ML = Mainloop<S>;
  using Bias = BiasPrefetch<S, ML::kMI, ML::kOutBN>;
  static constexpr int kStagingBytes = S::kTmaStore ? S::kConsumers * 2 * 64 * 128 : 0;
  static constexpr int kBiasBytes = S::kConsumers * Bias::kSmemBytes;
  static constexpr bool kSplitCluster = SplitClusterOf<S>::value;
  // Rank 1's partial tiles (split_cluster.cuh), one buffer per consumer.
  static constexpr int kSplitBytes =
      kSplitCluster ? S::kConsumers * ClusterSplit<ML::kMI, ML::kBN>::kBytes : 0;
  // Alignment slack, the ring, the staging blocks, the column biases, the
  // partial tiles, the ring's barriers, the cluster split's barriers.
  static constexpr int kBytes = 1024 + ML::kStages * ML::kStageBytes + kStagingBytes + kBiasBytes +
                                kSplitBytes + 2 * ML::kStages * 8 + (kSplitCluster ? 32 : 0);
};

// The store of one consumer warpgroup's tile: through shared memory and TMA
// where the spec allows it, else from registers. fp32 D stores the
// warpgroup's last tile from registers too: nothing overlaps that store, and
// the TMA path's four rounds of staging (32 columns a block) cost more than
// stores straight from registers (H100, docs/kernels.md).
template <class S, int kMI, int kBN>
__device__ __forceinline__ void Store(const GemmArgs& args, float (&acc)[kMI][kBN / 2], int batch,
                                      int m0, int n0, int thread, const TensorMap* map_d,
                                      unsigned staging, const BiasPrefetch<S, kMI, kBN>& bias,
                                      unsigned bias_smem, int consumer, bool last) {
  if constexpr (S::kTmaStore && sizeof(typename S::ElementD) == 4) {
    if (last) {
      Epilogue<S, kMI, kBN>::Store(args, acc, batch, m0, n0, thread);
      return;
    }
  }
  if constexpr (S::kTmaStore) {
    using Epi = TmaStoreEpilogue<S, kMI, kBN>;
    Epi::Store(args, acc, batch, Mainloop<S>::template BatchCoord<S::kStrideD>(batch), m0, n0,
               thread, map_d, staging + consumer * Epi::kSmemBytes, bias,
               bias_smem + consumer * BiasPrefetch<S, kMI, kBN>::kSmemBytes, 1 + consumer);
  } else {
    Epilogue<S, kMI, kBN>::Store(args, acc, batch, m0, n0, thread);
  }
}

template <class S, class = void>
struct EarlyBOf {
  static constexpr bool value = false;
};
template <class S>
struct EarlyBOf<S, decltype(void(S::kEarlyB))> {
  static constexpr bool value = S::kEarlyB;
};

template <class S>
__global__ void __launch_bounds__(S::kThreads, 1)
    GemmTmaWgmma(const __grid_constant__ GemmArgs args, const __grid_constant__ TensorMaps maps) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using ML = Mainloop<S>;
  using T = typename S::ElementA;
  static_assert(IsSame<T, typename S::ElementB>::value, "A and B must have one type");
  static_assert(IsSame<T, half_t>::value || IsSame<T, bfloat16_t>::value,
                "sm90 family: fp16 or bf16 operands");
  static_assert(S::kM > 0, "sm90 family: M is a compile-time constant");
  static_assert(S::kThreads == 128 * (1 + S::kConsumers), "one producer warpgroup");
  constexpr bool kPingPong = PingPongOf<S>::value;
  static_assert(!kPingPong || (S::kConsumers == 2 && S::kSplitK == 1),
                "ping-pong: two consumer warpgroups, no split-K");
  static_assert(S::kAlignA >= 16 && S::kAlignB >= 16, "TMA needs 16-byte-aligned rows");
  constexpr int kStages = ML::kStages, kKTiles = ML::kKTiles;
  constexpr int kTilesM = (S::kM + ML::kBM - 1) / ML::kBM;
  constexpr int kTilesN = (S::kN + ML::kOutBN - 1) / ML::kOutBN;
  using Sched = TileScheduler<kTilesM, kTilesN, S::kBatch, S::kClusterM, S::kGroupM>;
  constexpr int kSplitUnits = SplitUnitsOf<S, Sched::kUnits>::value;
  using Works = WorkList<Sched::kUnits, S::kSplitK, kSplitUnits, kKTiles>;
  constexpr int kItems = Works::kItems;
  constexpr bool kSplitCluster = Sm90Smem<S>::kSplitCluster;
  static_assert(!kSplitCluster || (S::kSplitK == 2 && S::kClusterM == 1 && !kPingPong &&
                                   kSplitUnits == Sched::kUnits),
                "a cluster split: 2 splits of every unit, no other cluster, no ping-pong");
  using CS = ClusterSplit<ML::kMI, ML::kBN>;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned smem = (SmemAddr(smem_raw) + 1023u) & ~1023u;
  const unsigned staging = smem + kStages * ML::kStageBytes;
  const unsigned bias_smem = staging + Sm90Smem<S>::kStagingBytes;
  const unsigned split_buf = bias_smem + Sm90Smem<S>::kBiasBytes;
  const unsigned bars = split_buf + Sm90Smem<S>::kSplitBytes;
  auto full = [&](int s) { return bars + 8u * s; };
  auto empty = [&](int s) { return bars + 8u * (kStages + s); };
  auto partial = [&](int c) { return bars + 16u * kStages + 8u * c; };
  auto free_bar = [&](int c) { return bars + 16u * kStages + 16u + 8u * c; };

  const int warpgroup = threadIdx.x / 128;
  const unsigned rank = S::kClusterM > 1 ? ClusterRank() : 0u;
  const unsigned rank_k =
      kSplitCluster ? ClusterRank() : 0u;  // the split a cluster split's CTA runs
  const int clusters = gridDim.x / S::kClusterM;
  const int cluster = blockIdx.x / S::kClusterM;

  if (threadIdx.x == 0) {
    PrefetchTensorMap(&maps.a);
    PrefetchTensorMap(&maps.b);
    if (S::kTmaStore) PrefetchTensorMap(&maps.d);
    if (ML::kATail) PrefetchTensorMap(&maps.a_tail);
    if (ML::kBTail) PrefetchTensorMap(&maps.b_tail);
    for (int s = 0; s < kStages; ++s) {
      MbarInit(full(s), 1);
      MbarInit(empty(s), ML::kConsumers * S::kClusterM);
    }
    if (kSplitCluster) {
      for (int c = 0; c < S::kConsumers; ++c) {
        MbarInit(partial(c), 1);
        MbarInit(free_bar(c), 128);
      }
    }
    FenceBarrierInit();
  }
  __syncthreads();
  // A peer's barriers must be initialised before this CTA multicasts into
  // them or releases its stages. Every thread arrives here and waits only
  // before its first such step: a cluster barrier right here held the first
  // load 0.55 us behind the unclustered kernel's (docs/kernels.md, "Cluster start").
  if (S::kClusterM > 1) ClusterArriveRelaxed();
  // Rank 1 waits for this before its first push into rank 0.
  if (kSplitCluster) ClusterArrive();
  constexpr bool kEarlyB = S::kPdl && EarlyBOf<S>::value;
  // The producer warpgroup reads nothing another kernel writes but A (and B
  // without kEarlyB), so with kEarlyB its thread 0 waits on its own, later.
  if (S::kPdl && !(kEarlyB && warpgroup == 0)) GridDependencyWait();

  if (warpgroup == 0) {
    RegDealloc<S::kConsumers == 1 ? 40 : 24>();
    if (S::kClusterM > 1) ClusterWait();
    if (threadIdx.x == 0) {
      // kEarlyB: the B tiles of the first `early` slices (fresh stages, so
      // nothing to wait for) go out while the previous grid may still run;
      // their A tiles follow the dependency wait.
      int early = 0;
      if constexpr (kEarlyB) {
        // Four: each A tile queues behind the B tiles sent before it, and
        // with the whole ring's B early the first slice landed later than
        // with none (docs/kernels.md, "Early B in the sm90 family").
        constexpr int kEarly = kStages < 4 ? kStages : 4;
        for (int item = cluster; item < kItems && early < kEarly; item += clusters) {
          const Work w = Works::At(item);
          const typename Sched::Tile t = Sched::Get(w.unit, rank);
          for (int kt = w.k_begin; kt < w.k_end && early < kEarly; ++kt, ++early) {
            MbarArriveExpectTx(full(early), ML::LoadBytes(t.tile_m, t.tile_n));
            ML::LoadB(maps, smem + early * ML::kStageBytes, full(early), kt, t.tile_n, t.batch,
                      rank);
          }
        }
        GridDependencyWait();
      }
      int it = 0;
      for (int item = cluster; item < kItems; item += clusters) {
        const Work w = Works::At(item);
        const typename Sched::Tile t = Sched::Get(w.unit, rank);
        for (int kt = w.k_begin; kt < w.k_end; ++kt, ++it) {
          const int s = it % kStages;
          if (kEarlyB && it < early) {
            ML::LoadA(maps, smem + s * ML::kStageBytes, full(s), kt, t.tile_m, t.batch);
            continue;
          }
          MbarWait(empty(s), ((it / kStages) & 1) ^ 1);
          MbarArriveExpectTx(full(s), ML::LoadBytes(t.tile_m, t.tile_n));
          ML::Load(maps, smem + s * ML::kStageBytes, full(s), kt, t.tile_m, t.tile_n, t.batch,
                   rank);
        }
      }
      if (S::kClusterM > 1) {
        // The peer's consumers release this CTA's stages remotely. Once the
        // last release of every stage has landed, nothing in the cluster
        // touches this CTA's shared memory again (the peer's multicasts filled
        // stages this CTA's consumers have waited for), so the CTA may leave
        // without a cluster barrier, which would hold it until the peer's
        // epilogue ends.
        for (int i = 0; i < kStages; ++i, ++it) {
          MbarWait(empty(it % kStages), ((it / kStages) & 1) ^ 1);
        }
      }
    }
  } else {
    RegAlloc<S::kConsumers == 1 ? 256 : 240>();
    const int consumer = warpgroup - 1;
    const int thread = threadIdx.x % 128;
    int it = 0;
    int handed = 0;  // cluster split: partial tiles pushed (rank 1) or added (rank 0)
    float acc[ML::kMI][ML::kBN / 2];
    // Ping-pong: this warpgroup takes every other item of the CTA's sequence,
    // and the ring position skips the other's k slices (no split-K, so every
    // item has kKTiles of them).
    const int first = kPingPong ? cluster + consumer * clusters : cluster;
    const int step = kPingPong ? 2 * clusters : clusters;
    for (int item = first; item < kItems; item += step) {
      const Work w = Works::At(item);
      // The k loop counts its slices and finds the previous stage from the
      // ring position, which keeps fewer registers live than its bounds and
      // the last stage would.
      const int slices = w.k_end - w.k_begin;
      const typename Sched::Tile t = Sched::Get(w.unit, rank);
      // Ping-pong mainloops take turns. Besides giving each one the tensor
      // cores alone, this keeps a warpgroup from waiting on a stage more than
      // one phase ahead of its barrier, which the phase parity could not tell
      // apart.
      const int position = (item - cluster) / clusters;  // in the CTA's sequence
      const int m0 = t.tile_m * ML::kBM + (kPingPong ? 0 : consumer * ML::kMI * 64);
      const int n0 = t.tile_n * ML::kOutBN;
      typename Sm90Smem<S>::Bias bias;
      bias.Load(args, t.batch, m0, n0, thread);
      // Before this warpgroup's first item (see the arrive above). A flag for
      // it stayed live through every tile and ptxas spilled it.
      if (S::kClusterM > 1 && item < step) ClusterWait();
      if (kPingPong) {
        it = position * kKTiles;
        if (position > 0) WaitTurn(consumer);
      }
      // The first wgmma of a tile ignores the accumulators, but its operands
      // read them, which kept the last tile's alive through its epilogue.
      // Epilogues that compute values beside them (a gate, a GELU, a per-row
      // bias with SiLU) made ptxas spill in ping-pong tiles of 160 and 192
      // accumulators a thread. Zeroed here, they die as the epilogue consumes
      // them. Tiles of at most 128 did not spill and keep the code they were
      // timed with.
      if constexpr (ML::kMI * ML::kBN / 2 > 128) {
#pragma unroll
        for (int i = 0; i < ML::kMI; ++i) {
#pragma unroll
          for (int j = 0; j < ML::kBN / 2; ++j) acc[i][j] = 0.f;
        }
      }
      for (int i = 0; i < slices; ++i, ++it) {
        const int s = it % kStages;
        MbarWait(full(s), (it / kStages) & 1);
        WgmmaFence();
        ML::Mma(acc, smem + s * ML::kStageBytes, kPingPong ? 0 : consumer, i == 0);
        WgmmaCommit();
        // The previous stage's wgmmas are done once at most this one is in flight.
        WgmmaWait<1>();
        if (i > 0 && thread == 0) {
          const int prev = (it - 1) % kStages;
          for (int r = 0; r < S::kClusterM; ++r) {
            if (S::kClusterM == 1) {
              MbarArrive(empty(prev));
            } else {
              MbarArriveCluster(empty(prev), r);
            }
          }
        }
      }
      if (kPingPong && item + clusters < kItems) PassTurn(consumer);
      WgmmaWait<0>();
#pragma unroll
      for (int i = 0; i < ML::kMI; ++i) {
#pragma unroll
        for (int j = 0; j < ML::kBN / 2; ++j) FenceRegister(acc[i][j]);
      }
      if (thread == 0) {
        const int prev = (it - 1) % kStages;
        for (int r = 0; r < S::kClusterM; ++r) {
          if (S::kClusterM == 1) {
            MbarArrive(empty(prev));
          } else {
            MbarArriveCluster(empty(prev), r);
          }
        }
      }
      if (item + clusters >= kItems && S::kPdl) LaunchDependents();
      if (m0 >= S::kM) continue;
      if constexpr (kSplitCluster) {
        const unsigned buf = split_buf + consumer * CS::kBytes;
        // Rank 1: rank 0 has initialised its barriers. Rank 0 waits too, so
        // that every consumer thread that arrived on the cluster barrier also
        // waits on it: without that wait compute-sanitizer's racecheck never
        // finished a launch (docs/kernels.md).
        if (handed == 0) ClusterWait();
        if (w.split == 1) {
          CS::Push(acc, buf, partial(consumer), free_bar(consumer), handed++, thread);
          continue;
        }
        CS::Add(acc, buf, partial(consumer), free_bar(consumer), handed++, thread);
      } else if constexpr (S::kSplitK > 1) {
        // Partial sums are kept per (split unit, cluster rank, consumer).
        constexpr long long kSlots =
            static_cast<long long>(kSplitUnits) * S::kClusterM * S::kConsumers;
        if (w.split_unit >= 0 &&
            !SplitK<S, ML::kMI, ML::kBN>::Reduce(
                args, acc,
                (static_cast<long long>(w.split_unit) * S::kClusterM + rank) * S::kConsumers +
                    consumer,
                kSlots, w.split, thread, 1 + consumer)) {
          continue;
        }
      }
      const bool last = item + step >= kItems;
      if constexpr (ML::kGated) {
        float out[ML::kMI][ML::kOutBN / 2];
        GatedEpilogue<S, ML::kMI, ML::kBN>::Apply(args, acc, out, t.batch, n0, thread);
        Store<S, ML::kMI, ML::kOutBN>(args, out, t.batch, m0, n0, thread, &maps.d, staging, bias,
                                      bias_smem, consumer, last);
      } else {
        Store<S, ML::kMI, ML::kBN>(args, acc, t.batch, m0, n0, thread, &maps.d, staging, bias,
                                   bias_smem, consumer, last);
      }
    }
    // Bulk stores must finish reading shared memory before the CTA exits; their
    // writes are part of the grid's completion (as in CUTLASS's store tail),
    // so waiting for them here would only lengthen the tail.
    if (S::kTmaStore && thread == 0) BulkWaitRead<0>();
    if (kSplitCluster && rank_k == 1) CS::Drain(free_bar(consumer), handed);
  }
#else
  static_assert(sizeof(S) == 0, "the sm90 family needs the sm_90a target (wgmma, setmaxnreg)");
#endif
}

}  // namespace sm90
}  // namespace jitgemm
