// Split-K of the sm90 family between the two CTAs of a cluster: rank 0 runs
// the first half of every tile's k loop, rank 1 the second, and rank 1's
// consumer warpgroups hand their partial sums to rank 0's through distributed
// shared memory (st.async, counted on rank 0's mbarrier) instead of the
// workspace round trip of split_k.cuh. Rank 0 adds them and runs the epilogue;
// rank 1 goes on to its next tile. A spec opts in with
// `static constexpr bool kSplitCluster = true;` (kSplitK == 2, kClusterM == 1,
// every unit split), launched with clusters of 2 along x: the items of a unit
// are consecutive and the grid is even, so a cluster's ranks take the two
// splits of the same unit.
//
// Per consumer warpgroup, in rank 0's shared memory: a buffer of kRegs floats
// a thread, stored [reg / 4][thread] as float4 so that a warp's stores are
// contiguous, and a "partial" barrier (one arrival with the expected bytes,
// completed by rank 1's stores). In rank 1: a "free" barrier, one arrival per
// thread of rank 0's warpgroup once it has read the buffer. Rank 1 waits for
// the last of those before it leaves, so no arrival lands in a CTA that has
// left.
#pragma once

#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/ptx.cuh"

namespace jitgemm {
namespace sm90 {

template <class S, class = void>
struct SplitClusterOf {
  static constexpr bool value = false;
};
template <class S>
struct SplitClusterOf<S, decltype(void(S::kSplitCluster))> {
  static constexpr bool value = S::kSplitCluster;
};

template <int kMI, int kBN>
struct ClusterSplit {
  static constexpr int kRegs = kMI * kBN / 2;
  static_assert(kRegs % 4 == 0, "float4 stores");
  static constexpr int kBytes = kRegs * 4 * 128;  // one warpgroup's partial tile

  // Rank 1: the `count`-th partial tile of this warpgroup (counted from 0)
  // into rank 0's buffer, once rank 0 has read the previous one.
  __device__ __forceinline__ static void Push(const float (&acc)[kMI][kBN / 2], unsigned buf,
                                              unsigned partial, unsigned free_bar, int count,
                                              int thread) {
    MbarWait(free_bar, (count & 1) ^ 1);
    const unsigned remote_buf = MapaShared(buf, 0u), remote_bar = MapaShared(partial, 0u);
#pragma unroll
    for (int q = 0; q < kRegs / 4; ++q) {
      float v[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = acc[(4 * q + e) / (kBN / 2)][(4 * q + e) % (kBN / 2)];
      StoreAsyncF4(remote_buf + static_cast<unsigned>((q * 128 + thread) * 16), v, remote_bar);
    }
  }

  // Rank 0: adds rank 1's `count`-th partial tile into `acc`, then frees the
  // buffer.
  __device__ __forceinline__ static void Add(float (&acc)[kMI][kBN / 2], unsigned buf,
                                             unsigned partial, unsigned free_bar, int count,
                                             int thread) {
    if (thread == 0) MbarArriveExpectTx(partial, kBytes);
    MbarWait(partial, count & 1);
#pragma unroll
    for (int q = 0; q < kRegs / 4; ++q) {
      float v[4];
      asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                   : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
                   : "r"(buf + static_cast<unsigned>((q * 128 + thread) * 16))
                   : "memory");
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[(4 * q + e) / (kBN / 2)][(4 * q + e) % (kBN / 2)] += v[e];
    }
    MbarArriveCluster(free_bar, 1u);
  }

  // Rank 1, before leaving: after `count` pushes, waits until rank 0 has read
  // the last one.
  __device__ __forceinline__ static void Drain(unsigned free_bar, int count) {
    MbarWait(free_bar, (count & 1) ^ 1);
  }
};

}  // namespace sm90
}  // namespace jitgemm
