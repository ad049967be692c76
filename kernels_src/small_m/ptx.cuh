// PTX building blocks of the small-M family: streaming loads of the weight
// operand, cp.async into shared memory, the bf16/fp16 m16n8k16 tensor-core
// product, L2 prefetch and the gpu-scope atomics of the in-kernel split-K.
// No CUDA toolkit header: everything is inline PTX.
#pragma once

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

__device__ __forceinline__ unsigned SmemAddr(const void* p) {
  unsigned long long a;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
  return static_cast<unsigned>(a);
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

// The first `count` (< 8) elements at p, the rest zero.
__device__ __forceinline__ U4 Load8Partial(const unsigned short* p, int count) {
  unsigned h[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) h[e] = e < count ? LoadNc2(p + e) : 0u;
  U4 v;
  v.x = h[0] | (h[1] << 16);
  v.y = h[2] | (h[3] << 16);
  v.z = h[4] | (h[5] << 16);
  v.w = h[6] | (h[7] << 16);
  return v;
}

__device__ __forceinline__ void CpAsync16(unsigned smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem), "l"(gmem) : "memory");
}
// Copies src_bytes (0 or 16) and zero-fills the rest of the 16 bytes.
__device__ __forceinline__ void CpAsync16Z(unsigned smem, const void* gmem, unsigned src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem), "l"(gmem),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void CpAsyncWaitAll() {
  asm volatile("cp.async.wait_all;" ::: "memory");
}
__device__ __forceinline__ void CpAsyncCommit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
// Waits until at most kPending of this thread's committed groups are in flight.
template <int kPending>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}
// The same for a count known only after unrolling (folds to one instruction).
__device__ __forceinline__ void CpAsyncWaitN(int pending) {
  switch (pending) {
    case 0:
      CpAsyncWait<0>();
      break;
    case 1:
      CpAsyncWait<1>();
      break;
    case 2:
      CpAsyncWait<2>();
      break;
    case 3:
      CpAsyncWait<3>();
      break;
    case 4:
      CpAsyncWait<4>();
      break;
    case 5:
      CpAsyncWait<5>();
      break;
    case 6:
      CpAsyncWait<6>();
      break;
    case 7:
      CpAsyncWait<7>();
      break;
    case 8:
      CpAsyncWait<8>();
      break;
    case 9:
      CpAsyncWait<9>();
      break;
    case 10:
      CpAsyncWait<10>();
      break;
    case 11:
      CpAsyncWait<11>();
      break;
    case 12:
      CpAsyncWait<12>();
      break;
    case 13:
      CpAsyncWait<13>();
      break;
    case 14:
      CpAsyncWait<14>();
      break;
    default:
      CpAsyncWait<15>();
      break;
  }
}

__device__ __forceinline__ void StoreShared16(unsigned smem, const U4& v) {
  asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(smem), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}

// D(16x8, f32) += A(16x16, row) * B(16x8, col), 16-bit inputs.
template <class T>
__device__ __forceinline__ void Mma16816(float* d, unsigned a0, unsigned a1, unsigned a2,
                                         unsigned a3, unsigned b0, unsigned b1) {
  if (IsSame<T, bfloat16_t>::value) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

// Prefetch `bytes` (a multiple of 16, 16-byte aligned start) into L2 with one
// bulk request (sm_90), or line by line (any arch; p need not be aligned).
__device__ __forceinline__ void PrefetchBulkL2(const void* p, unsigned bytes) {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#endif
}

// Thread-block clusters and bulk copies (sm_90): x multicast to every CTA of
// a cluster, completion counted in bytes on an mbarrier in each destination.
__device__ __forceinline__ unsigned ClusterRank() {
  unsigned r = 0;
#if __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
#endif
  return r;
}
__device__ __forceinline__ void ClusterSync() {
#if __CUDA_ARCH__ >= 900
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n"
      "barrier.cluster.wait.acquire.aligned;" ::
          : "memory");
#endif
}
__device__ __forceinline__ void ClusterArrive() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void ClusterWait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}
// The address of shared-memory location `addr` (this CTA's window) in the
// CTA of cluster rank `rank`.
__device__ __forceinline__ unsigned MapaShared(unsigned addr, unsigned rank) {
  unsigned out = addr;
#if __CUDA_ARCH__ >= 900
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(addr), "r"(rank));
#endif
  return out;
}
// 16 bytes into a peer CTA's shared memory, completing transaction bytes on
// the peer's mbarrier `bar` (both shared::cluster addresses).
__device__ __forceinline__ void StoreAsyncF4(unsigned addr, const float (&v)[4], unsigned bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, "
      "[%5];" ::"r"(addr),
      "f"(v[0]), "f"(v[1]), "f"(v[2]), "f"(v[3]), "r"(bar)
      : "memory");
#endif
}
// wgmma.m64nNk16 with both operands from shared memory (descriptors), f32
// accumulators; `scale` 0 overwrites the accumulators (first product).
#define JITGEMM_WGMMA_N16(TY)                                                               \
  asm volatile(                                                                             \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"                                          \
      "wgmma.mma_async.sync.aligned.m64n16k16.f32." TY "." TY                               \
      " {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1, 0, 0;\n}\n"                             \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), \
        "+f"(d[7])                                                                          \
      : "l"(a), "l"(b), "r"(scale))
#define JITGEMM_WGMMA_N32(TY)                                                                   \
  asm volatile(                                                                                 \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"                                              \
      "wgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY                                   \
      " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 0, 0;\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),     \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), \
        "+f"(d[14]), "+f"(d[15])                                                                \
      : "l"(a), "l"(b), "r"(scale))
template <class T, int BN>
__device__ __forceinline__ void WgMma(float (&d)[BN / 2], unsigned long long a,
                                      unsigned long long b, int scale) {
#if __CUDA_ARCH__ >= 900
  constexpr bool kBf16 = IsSame<T, bfloat16_t>::value;
  if constexpr (BN == 16 && kBf16) {
    JITGEMM_WGMMA_N16("bf16");
  } else if constexpr (BN == 16) {
    JITGEMM_WGMMA_N16("f16");
  } else if constexpr (kBf16) {
    JITGEMM_WGMMA_N32("bf16");
  } else {
    JITGEMM_WGMMA_N32("f16");
  }
#endif
}
#undef JITGEMM_WGMMA_N16
#undef JITGEMM_WGMMA_N32

__device__ __forceinline__ void MbarInit(unsigned bar, unsigned count) {
#if __CUDA_ARCH__ >= 900
  asm volatile(
      "mbarrier.init.shared::cta.b64 [%0], %1;\n"
      "fence.mbarrier_init.release.cluster;" ::"r"(bar),
      "r"(count)
      : "memory");
#endif
}
__device__ __forceinline__ void MbarArriveExpectTx(unsigned bar, unsigned bytes) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
#endif
}
__device__ __forceinline__ void MbarWait(unsigned bar, unsigned parity) {
#if __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n .reg .pred p;\n"
      "W_%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra W_%=;\n}" ::"r"(bar),
      "r"(parity)
      : "memory");
#endif
}
// `bytes` (multiple of 16) from global to this CTA's shared memory.
__device__ __forceinline__ void BulkCopy(unsigned dst, const void* src, unsigned bytes,
                                         unsigned bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
#endif
}
// `bytes` (multiple of 16) from global to the same shared offset in every
// CTA of `mask`, each completing `bytes` on its own mbarrier at `bar`.
__device__ __forceinline__ void BulkCopyMulticast(unsigned dst, const void* src, unsigned bytes,
                                                  unsigned bar, unsigned short mask) {
#if __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1], %2, [%3], %4;" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar), "h"(mask)
      : "memory");
#endif
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
