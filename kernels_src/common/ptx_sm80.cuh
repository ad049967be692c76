// Inline-PTX wrappers every tensor-core family shares: the shared-window
// address of a pointer, cp.async global -> shared copies, 16-byte shared
// stores, ldmatrix and the m16n8k16 mma.sync product. Each instruction exists
// on sm_80 and later; Hopper-only PTX lives in sm90/ptx.cuh. In namespace
// jitgemm, so every family's namespace finds them unqualified.
// No CUDA toolkit header.
#pragma once

#include "jitgemm/common/types.cuh"

namespace jitgemm {

// 32-bit shared-state-space address of a generic pointer into shared memory.
__device__ __forceinline__ unsigned SmemAddr(const void* p) {
  unsigned long long a;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
  return static_cast<unsigned>(a);
}

// The same with the conversion inside the asm, so the compiler never sees the
// 64-bit value: the sm80 family's form. SmemAddr's form lets the compiler fold
// the truncation into later arithmetic, and the sm80 kernels' SASS changes.
__device__ __forceinline__ unsigned SmemAddrAsm(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// Asynchronous global -> shared copies. `src_bytes` < the copy size zero-fills
// the rest (0: nothing is read and the destination becomes zeros). The source
// address must be aligned to the copy size.
__device__ __forceinline__ void CpAsync16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void CpAsync16(unsigned dst, const void* src, unsigned src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void CpAsync8(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void CpAsync4(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
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
__device__ __forceinline__ void CpAsyncWaitAll() {
  asm volatile("cp.async.wait_all;" ::: "memory");
}

__device__ __forceinline__ void StShared128(unsigned dst, unsigned x, unsigned y, unsigned z,
                                            unsigned w) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(x), "r"(y), "r"(z),
               "r"(w)
               : "memory");
}

// Four 8x8 matrices of 16-bit elements; lanes 8q..8q+7 address the rows of
// matrix q. Trans delivers each matrix transposed.
template <bool kTrans>
__device__ __forceinline__ void Ldmatrix4(unsigned (&r)[4], unsigned addr) {
  if (kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
  }
}

// D(16x8, f32) += A(16x16, row) * B(16x8, col), 16-bit inputs (T: half_t or
// bfloat16_t); d[0..3] and a0..a3 / b0, b1 are the PTX fragment registers.
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
template <class T>
__device__ __forceinline__ void Mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                         unsigned b1) {
  Mma16816<T>(&d[0], a[0], a[1], a[2], a[3], b0, b1);
}

}  // namespace jitgemm
