// Hopper-only PTX: tensor maps and TMA loads, mbarriers, bulk copies,
// thread-block clusters (mapa, st.async), wgmma fences and shared-memory
// matrix descriptors, register reallocation. Everything here needs sm_90
// (wgmma and setmaxnreg: sm_90a). Used by the sm90 family and by the Hopper
// paths of small_m. small_m also compiles for sm_80, so the wrappers it calls
// compile to nothing below sm_90 (ClusterRank is 0, MapaShared the identity);
// its host rules allow the configs that need them on sm_90 only.
#pragma once

#include "jitgemm/common/ptx_sm80.cuh"
#include "jitgemm/common/types.cuh"

namespace jitgemm {
namespace sm90 {

// Opaque 128-byte tensor map made on the host by cuTensorMapEncodeTiled and
// passed as a __grid_constant__ kernel parameter.
struct __align__(64) TensorMap {
  unsigned long long opaque[16];
};

__device__ __forceinline__ void PrefetchTensorMap(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

__device__ __forceinline__ void MbarInit(unsigned bar, unsigned count) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
#endif
}

// Makes barrier initialisation visible to the async proxy (TMA) and the cluster.
__device__ __forceinline__ void FenceBarrierInit() {
#if __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

__device__ __forceinline__ void MbarArriveExpectTx(unsigned bar, unsigned bytes) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
#endif
}

__device__ __forceinline__ void MbarArrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Blocks until the phase of parity `parity` of the barrier has completed.
__device__ __forceinline__ void MbarWait(unsigned bar, unsigned parity) {
#if __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n.reg .pred p;\n"
      "W_%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra W_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#endif
}

// 3-D tiled TMA load of one box into shared memory, completing its bytes on `bar`.
__device__ __forceinline__ void TmaLoad3d(unsigned dst, const TensorMap* map, unsigned bar, int c0,
                                          int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// The same box delivered to the shared memory (same offset) and the barrier
// of every CTA of the cluster named in `mask`.
__device__ __forceinline__ void TmaLoad3dMulticast(unsigned dst, const TensorMap* map, unsigned bar,
                                                   unsigned short mask, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%4, %5, %6}], [%2], %3;" ::"r"(dst),
      "l"(map), "r"(bar), "h"(mask), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

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
// The two halves of ClusterSync, for work between the arrive and the wait.
__device__ __forceinline__ void ClusterArrive() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}
// An arrive that orders nothing: enough where every shared-memory location a
// peer will touch is an mbarrier made visible by FenceBarrierInit.
__device__ __forceinline__ void ClusterArriveRelaxed() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
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

// Arrives on the barrier at the same shared-memory offset in CTA `rank` of the cluster.
// Deliberately a plain (relaxed-by-default) arrive without `.release.cluster`:
// with the qualifier the sm90 kernel ran about 2x slower.
__device__ __forceinline__ void MbarArriveCluster(unsigned bar, unsigned rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}" ::"r"(bar),
      "r"(rank)
      : "memory");
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
// Prefetch `bytes` (a multiple of 16, 16-byte aligned start) into L2 with one
// bulk request.
__device__ __forceinline__ void PrefetchBulkL2(const void* p, unsigned bytes) {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#endif
}

// 3-D tiled TMA store of one box from shared memory, in the bulk-async group
// of the issuing thread.
__device__ __forceinline__ void TmaStore3d(const TensorMap* map, unsigned src, int c0, int c1,
                                           int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
          map),
      "r"(src), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
__device__ __forceinline__ void BulkCommit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// At most N of this thread's bulk groups still read their shared memory.
template <int N>
__device__ __forceinline__ void BulkWaitRead() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Orders this thread's generic-proxy shared-memory writes before later
// async-proxy (TMA) reads of them.
__device__ __forceinline__ void FenceProxyAsyncShared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Barrier among `threads` threads (a warpgroup) on hardware barrier `id` (1..15).
__device__ __forceinline__ void NamedBarrierSync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Four 8x8 16-bit matrices from the registers of a warp to shared memory;
// lane L gives the address of row L % 8 of matrix L / 8.
__device__ __forceinline__ void StMatrixX4(unsigned addr, unsigned r0, unsigned r1, unsigned r2,
                                           unsigned r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

// wgmma ordering: Fence before the first wgmma that reads registers written
// by other instructions; Commit closes a group; Wait<N> leaves at most N
// groups in flight.
__device__ __forceinline__ void WgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void WgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Keeps the compiler from moving accumulator accesses across a wgmma wait.
__device__ __forceinline__ void FenceRegister(float& r) { asm volatile("" : "+f"(r)::"memory"); }

template <int kRegs>
__device__ __forceinline__ void RegAlloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void RegDealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}

// Shared-memory matrix descriptor for a kSwizzleBytes-swizzled operand tile
// whose swizzle atoms (8 rows of kSwizzleBytes) sit at `sbo` bytes apart
// along the strided dimension and, for M-/N-major tiles, column blocks of
// kSwizzleBytes / 2 elements at `lbo` bytes apart. Tiles must be aligned to
// their atoms (1024 or 512 bytes).
template <int kSwizzleBytes = 128>
__device__ __forceinline__ unsigned long long SmemDesc(unsigned addr, unsigned lbo, unsigned sbo) {
  static_assert(kSwizzleBytes == 128 || kSwizzleBytes == 64, "128- or 64-byte swizzle");
  unsigned long long d = 0;
  d |= static_cast<unsigned long long>((addr & 0x3FFFF) >> 4);
  d |= static_cast<unsigned long long>((lbo & 0x3FFFF) >> 4) << 16;
  d |= static_cast<unsigned long long>((sbo & 0x3FFFF) >> 4) << 32;
  d |= (kSwizzleBytes == 128 ? 1ull : 2ull) << 62;  // the layout type's encoding
  return d;
}

}  // namespace sm90
}  // namespace jitgemm
