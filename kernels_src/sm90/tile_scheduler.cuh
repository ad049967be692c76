// Persistent tile schedule of the sm90 family. The grid holds at most one CTA
// per SM; CTA clusters of kClusterM along x take "units" (kClusterM tiles
// adjacent in M that share one B tile) in turn: unit u goes to cluster
// u mod clusters. Units are numbered batch by batch, and inside a batch in
// groups of kGroupM unit rows (or all of them, when fewer) walked down M
// first, so that the units in flight at one time share their A and B tiles in
// L2.
//
// WorkList numbers the work items: whole units, then, with split-K, the last
// kSplitUnits units each cut into kSplitK k ranges (all units for plain
// split-K; only the last, partial wave's where the units overfill whole
// waves, so that the last wave keeps every SM busy too). Items go to the
// clusters in turn, so the items of one wave run side by side at the same k
// and keep sharing their A and B tiles in L2 (stream-K, whose CTAs start
// their shares at different k, lost that: docs/kernels.md).
#pragma once

namespace jitgemm {
namespace sm90 {

// Ping-pong (a spec declaring `static constexpr bool kPingPong = true;`, which
// the specialiser writes only for such configs): the two consumer warpgroups
// take alternate tiles of the CTA's sequence, each a whole kBlockM x kBlockN
// tile, so one warpgroup's epilogue runs while the other's wgmmas keep the
// tensor cores busy. Otherwise (cooperative) both share every tile along M.
template <class S, class = void>
struct PingPongOf {
  static constexpr bool value = false;
};
template <class S>
struct PingPongOf<S, decltype(void(S::kPingPong))> {
  static constexpr bool value = S::kPingPong;
};

// The ping-pong mainloops take turns: named barrier 3 + c means "consumer
// warpgroup c may start its next mainloop". A warpgroup waits for its turn
// (bar.sync, 128 threads) and passes it once its wgmmas are issued
// (bar.arrive by the other 128 of the 256 counted).
__device__ __forceinline__ void WaitTurn(int consumer) {
  asm volatile("bar.sync %0, 256;" ::"r"(3 + consumer) : "memory");
}
__device__ __forceinline__ void PassTurn(int consumer) {
  asm volatile("bar.arrive %0, 256;" ::"r"(3 + (consumer ^ 1)) : "memory");
}

template <int kTilesM, int kTilesN, int kBatch, int kClusterM, int kGroupM>
struct TileScheduler {
  static constexpr int kUnitsM = (kTilesM + kClusterM - 1) / kClusterM;
  static constexpr int kUnitsPerBatch = kUnitsM * kTilesN;
  static constexpr int kUnits = kUnitsPerBatch * kBatch;

  struct Tile {
    int batch;
    int tile_m;  // this CTA's tile: unit row * kClusterM + cluster rank
    int tile_n;
  };

  __device__ __forceinline__ static Tile Get(int unit, int rank) {
    Tile t;
    t.batch = unit / kUnitsPerBatch;
    const int r = unit - t.batch * kUnitsPerBatch;
    // Down M first inside each group, also when all of M is one group:
    // walking N first there streams all of B once per unit row.
    const int per_group = kGroupM * kTilesN;
    const int group = r / per_group;
    const int first = group * kGroupM;
    const int size = kUnitsM - first < kGroupM ? kUnitsM - first : kGroupM;
    const int in_group = r - group * per_group;
    const int um = first + in_group % size;
    const int un = in_group / size;
    t.tile_m = um * kClusterM + rank;
    t.tile_n = un;
    return t;
  }
};

// How many units, counted from the last, a split-K spec splits: all unless
// the spec declares `static constexpr int kSplitUnits = ...;`.
template <class S, int kUnits, class = void>
struct SplitUnitsOf {
  static constexpr int value = kUnits;
};
template <class S, int kUnits>
struct SplitUnitsOf<S, kUnits, decltype(void(S::kSplitUnits))> {
  static constexpr int value = S::kSplitUnits;
};

struct Work {
  int unit;        // for TileScheduler::Get
  int split;       // k range of a split unit, 0 for a whole one
  int split_unit;  // index of a split unit among them, -1 for a whole one
  int k_begin;     // k slices of the unit this item covers
  int k_end;
};

template <int kUnits, int kSplitK, int kSplitUnits, int kKTiles>
struct WorkList {
  static constexpr int kWhole = kSplitK > 1 ? kUnits - kSplitUnits : kUnits;
  static constexpr int kItems = kWhole + (kUnits - kWhole) * kSplitK;
  // Every split owns at least one k slice (the host checks).
  static constexpr int kPerSplit = (kKTiles + kSplitK - 1) / kSplitK;
  static_assert(kWhole >= 0 && kWhole <= kUnits, "kSplitUnits: 0..units");

  // Item `item` (0 <= item < kItems) of the schedule.
  __device__ __forceinline__ static Work At(int item) {
    Work w;
    if (kSplitK == 1 || (kWhole > 0 && item < kWhole)) {
      w.unit = item;
      w.split = 0;
      w.split_unit = -1;
      w.k_begin = 0;
      w.k_end = kKTiles;
      return w;
    }
    const int j = item - kWhole;
    w.split_unit = j / kSplitK;
    w.unit = kWhole + w.split_unit;
    w.split = j - w.split_unit * kSplitK;
    w.k_begin = w.split * kPerSplit;
    w.k_end = w.k_begin + kPerSplit < kKTiles ? w.k_begin + kPerSplit : kKTiles;
    return w;
  }
};

}  // namespace sm90
}  // namespace jitgemm
