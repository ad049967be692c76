// Split-K of the sm90 family, for problems whose tiles leave SMs idle (all
// of them, or those of a last, partial wave): the kSplitK work items of a
// split tile each run a slice of the k loop; every consumer
// warpgroup writes its partial accumulators to its own workspace slot and
// takes a ticket; the last one to arrive sums all slots in split order (so the
// result does not depend on which arrives last), resets the ticket for the
// next launch and runs the epilogue.
//
// Workspace (zeroed by the plan): one u32 ticket per (split unit, cluster
// rank, consumer), padded to 256 bytes, then kSplitK slots per (split unit,
// rank, consumer) of kRegs floats per thread, stored [reg / 4][thread] as
// float4 so that a warp's accesses are contiguous.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/ptx.cuh"

namespace jitgemm {
namespace sm90 {

// NamedBarrierSync that also returns whether any of the threads passed true.
__device__ __forceinline__ bool NamedBarrierAny(int id, int threads, bool value) {
  unsigned any;
  asm volatile(
      "{\n"
      ".reg .pred p, q;\n"
      "setp.ne.u32 p, %1, 0;\n"
      "barrier.cta.red.or.pred q, %2, %3, p;\n"
      "selp.u32 %0, 1, 0, q;\n"
      "}"
      : "=r"(any)
      : "r"(static_cast<unsigned>(value)), "r"(id), "r"(threads)
      : "memory");
  return any != 0;
}

template <class S, int kMI, int kBN>
struct SplitK {
  static constexpr int kRegs = kMI * kBN / 2;
  static_assert(kRegs % 4 == 0, "float4 slots");
  static constexpr int kSlotFloats = kRegs * 128;

  __device__ __forceinline__ static void Store4(float* p, const float* v) {
    asm volatile("st.global.cg.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v[0]), "f"(v[1]),
                 "f"(v[2]), "f"(v[3])
                 : "memory");
  }
  __device__ __forceinline__ static void Load4(const float* p, float* v) {
    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
                 : "l"(p)
                 : "memory");
  }

  // Returns true in the warpgroup that must run the epilogue, with `acc`
  // then holding the sum of every split. `slot` indexes (tile, consumer) over
  // `slots` of them; `bar` is the warpgroup's named barrier.
  __device__ __forceinline__ static bool Reduce(const GemmArgs& args, float (&acc)[kMI][kBN / 2],
                                                long long slot, long long slots, int split,
                                                int thread, int bar) {
    unsigned* tickets = static_cast<unsigned*>(args.workspace);
    const long long ticket_bytes = (slots * 4 + 255) / 256 * 256;
    float* base =
        reinterpret_cast<float*>(static_cast<unsigned char*>(args.workspace) + ticket_bytes) +
        slot * S::kSplitK * kSlotFloats;
    float* mine = base + static_cast<long long>(split) * kSlotFloats;
#pragma unroll
    for (int r = 0; r < kRegs; r += 4) {
      float v[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = acc[(r + e) / (kBN / 2)][(r + e) % (kBN / 2)];
      Store4(mine + (r / 4 * 128 + thread) * 4, v);
    }
    NamedBarrierSync(bar, 128);
    unsigned prev = 0;
    if (thread == 0) {
      asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;"
                   : "=r"(prev)
                   : "l"(tickets + slot)
                   : "memory");
    }
    // Thread 0's ticket to the warpgroup through the barrier itself: a flag
    // word in shared memory took two more barriers, and its address, live
    // through every tile, was spilled.
    const bool last =
        NamedBarrierAny(bar, 128, thread == 0 && prev == static_cast<unsigned>(S::kSplitK - 1));
    if (!last) return false;
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    // Splits outside, registers inside: the sum keeps split order and only
    // the accumulators stay live (tiles of 128 accumulators a thread spilled
    // with a running sum per group of four).
#pragma unroll
    for (int r = 0; r < kRegs; ++r) acc[r / (kBN / 2)][r % (kBN / 2)] = 0.f;
#pragma unroll 1
    for (int s = 0; s < S::kSplitK; ++s) {
      const float* part = base + static_cast<long long>(s) * kSlotFloats + thread * 4;
#pragma unroll
      for (int r = 0; r < kRegs; r += 4) {
        float v[4];
        Load4(part + r / 4 * 128 * 4, v);
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[(r + e) / (kBN / 2)][(r + e) % (kBN / 2)] += v[e];
        // At most 32 loaded values in flight beside the accumulators (ptxas
        // keeps loads on their side of a warp barrier; with all of a split's
        // loads in flight, tiles of 128 accumulators a thread spilled).
        if (r % 32 == 28) __syncwarp();
      }
    }
    if (thread == 0) tickets[slot] = 0u;
    return true;
  }
};

}  // namespace sm90
}  // namespace jitgemm
