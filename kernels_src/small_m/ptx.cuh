// PTX building blocks only the small-M family uses: streaming loads of the
// weight operand, narrow read-only loads, and the gpu-scope atomics of the
// in-kernel split-K. cp.async, mma.sync and the shared-address conversion are
// in common/ptx_sm80.cuh, the Hopper-only PTX in sm90/ptx.cuh.
// No CUDA toolkit header: everything is inline PTX.
#pragma once

#include "jitgemm/common/ptx_sm80.cuh"
#include "jitgemm/common/types.cuh"

namespace jitgemm {
namespace small_m {

// Eight 16-bit values (16 bytes), the unit every thread loads.
struct alignas(16) U4 {
  unsigned x, y, z, w;
};

__device__ __forceinline__ U4 ZeroU4() {
  U4 r;
  r.x = r.y = r.z = r.w = 0u;
  return r;
}

// A 16-byte streaming load of data read exactly once: read-only path, no L1
// allocation. kHint 128/256 asks L2 to fetch that much around the line from
// DRAM. kEvictFirst marks the line first to go from L2 (policy: a createpolicy
// value, only read when kEvictFirst). Volatile: must not be hoisted above a
// griddepcontrol.wait.
template <int kHint, bool kEvictFirst>
__device__ __forceinline__ U4 LoadStream16(const void* p, unsigned long long policy) {
  U4 v;
  if (kEvictFirst) {
    if (kHint == 256) {
      asm volatile(
          "ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
          : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
          : "l"(p), "l"(policy));
    } else if (kHint == 128) {
      asm volatile(
          "ld.global.nc.L1::no_allocate.L2::cache_hint.L2::128B.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
          : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
          : "l"(p), "l"(policy));
    } else {
      asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                   : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                   : "l"(p), "l"(policy));
    }
  } else {
    if (kHint == 256) {
      asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                   : "l"(p));
    } else if (kHint == 128) {
      asm volatile("ld.global.nc.L1::no_allocate.L2::128B.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                   : "l"(p));
    } else {
      asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                   : "l"(p));
    }
  }
  return v;
}

__device__ __forceinline__ unsigned long long EvictFirstPolicy() {
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}

// Narrower read-only loads for operands whose rows are only 8, 4 or 2 byte
// aligned. These allocate in L1: the 4 threads that share a row segment
// reuse each other's lines.
__device__ __forceinline__ void LoadNc8(const void* p, unsigned& a, unsigned& b) {
  asm volatile("ld.global.nc.v2.u32 {%0,%1}, [%2];" : "=r"(a), "=r"(b) : "l"(p));
}
__device__ __forceinline__ unsigned LoadNc4(const void* p) {
  unsigned a;
  asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ unsigned LoadNc2(const void* p) {
  unsigned short a;
  asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(a) : "l"(p));
  return a;
}

// Eight consecutive 16-bit elements starting at p, all in range, p aligned to
// kAlign bytes.
template <int kAlign, int kHint, bool kEvictFirst>
__device__ __forceinline__ U4 Load8(const unsigned short* p, unsigned long long policy) {
  if (kAlign >= 16) return LoadStream16<kHint, kEvictFirst>(p, policy);
  U4 v;
  if (kAlign == 8) {
    LoadNc8(p, v.x, v.y);
    LoadNc8(p + 4, v.z, v.w);
  } else if (kAlign == 4) {
    v.x = LoadNc4(p);
    v.y = LoadNc4(p + 2);
    v.z = LoadNc4(p + 4);
    v.w = LoadNc4(p + 6);
  } else {
    v.x = LoadNc2(p) | (LoadNc2(p + 1) << 16);
    v.y = LoadNc2(p + 2) | (LoadNc2(p + 3) << 16);
    v.z = LoadNc2(p + 4) | (LoadNc2(p + 5) << 16);
    v.w = LoadNc2(p + 6) | (LoadNc2(p + 7) << 16);
  }
  return v;
}

// Eight 2-byte elements, each in the low half of a word, as one 16-byte unit.
__device__ __forceinline__ U4 Pack8(const unsigned (&h)[8]) {
  U4 v;
  v.x = h[0] | (h[1] << 16);
  v.y = h[2] | (h[3] << 16);
  v.z = h[4] | (h[5] << 16);
  v.w = h[6] | (h[7] << 16);
  return v;
}

// The first `count` (< 8) elements at p, the rest zero.
__device__ __forceinline__ U4 Load8Partial(const unsigned short* p, int count) {
  unsigned h[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) h[e] = e < count ? LoadNc2(p + e) : 0u;
  return Pack8(h);
}

__device__ __forceinline__ void StoreShared16(unsigned smem, const U4& v) {
  StShared128(smem, v.x, v.y, v.z, v.w);
}

// gpu-scope memory ordering for the split-K arrival counter.
__device__ __forceinline__ void FenceAcqRelGpu() {
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
__device__ __forceinline__ unsigned AtomicAddAcqRelGpu(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(p), "r"(v)
               : "memory");
  return old;
}
__device__ __forceinline__ void StoreRelaxedGpu(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// Partials written by other CTAs: read at L2, never a stale L1 line.
__device__ __forceinline__ void LoadCg4(const float* p, float& a, float& b, float& c, float& d) {
  asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];"
               : "=f"(a), "=f"(b), "=f"(c), "=f"(d)
               : "l"(p)
               : "memory");
}
__device__ __forceinline__ void StoreF4(float* p, float a, float b, float c, float d) {
  asm volatile("st.global.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d)
               : "memory");
}

}  // namespace small_m
}  // namespace jitgemm
