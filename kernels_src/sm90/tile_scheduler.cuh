// Persistent tile schedule of the sm90 family. The grid holds at most one CTA
// per SM; CTA clusters of kClusterM along x take "units" (kClusterM tiles
// adjacent in M that share one B tile) in turn: unit u goes to cluster
// u mod clusters. Units are numbered batch by batch, and inside a batch in
// groups of kGroupM unit rows (or all of them, when fewer) walked down M
// first, so that the units in flight at one time share their A and B tiles in
// L2.
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

}  // namespace sm90
}  // namespace jitgemm
