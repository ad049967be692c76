// The run-time argument block of every jitgemm kernel, and the compile-time
// "spec" contract between the specialiser (jit/specializer.cc) and the kernel
// templates.
//
// A generated translation unit defines
//
//   struct JitgemmSpec {
//     using ElementA, ElementB, ElementC, ElementD;   // float, half_t, bfloat16_t
//     static constexpr int kM, kN, kK;     // exact sizes; kM == 0: M is args.m
//     static constexpr bool kRowA, kRowB, kRowC, kRowD;   // row-major?
//     static constexpr int64 kLda, kLdb, kLdc, kLdd;      // elements
//     static constexpr int kBatch;                        // >= 1
//     static constexpr int64 kStrideA, kStrideB, kStrideC, kStrideD, kStrideBias;
//     // Byte alignment guaranteed for the first element of every row (row-major)
//     // or column (col-major) of every batch: gcd of pointer alignment, ld and
//     // batch stride in bytes, capped at 16.
//     static constexpr int kAlignA, kAlignB, kAlignC, kAlignD, kAlignBias;
//     static constexpr bool kHasC;   // beta != 0: C is read
//     static constexpr int kBias;    // 0 none, 1 per column (bias[n]), 2 per row (bias[m])
//     static constexpr int kAct;     // 0 none, 1 relu, 2 gelu tanh, 3 gelu erf, 4 silu
//     static constexpr bool kPdl;    // launched with programmatic dependent launch
//     // Tile configuration (meaning per family):
//     static constexpr int kBlockM, kBlockN, kBlockK, kWarpsM, kWarpsN, kStages, kSplitK;
//     static constexpr int kThreads;  // block size the launcher uses
//   };
//
// and instantiates the family's kernel template with it, found through an
// NVRTC name expression such as "jitgemm::simt::GemmSimt<JitgemmSpec>".
#pragma once

#include "jitgemm/common/types.cuh"

namespace jitgemm {

struct GemmArgs {
  const void* a;
  const void* b;
  const void* c;
  void* d;
  const void* bias;
  float alpha;
  float beta;
  int m;  // rows when the spec's kM is 0
  int reserved;
  // Zero-initialised by the plan; a kernel that uses it must leave it zeroed on
  // exit so the next launch (or graph replay) finds it clean.
  void* workspace;
};

// Element offsets inside one batch matrix. Indices fit in 32 bits by
// validation; the batch offset is 64-bit.
template <bool kRow, long long kLd>
__device__ __forceinline__ int64 Offset(int row, int col) {
  return kRow ? static_cast<int64>(row) * kLd + col : static_cast<int64>(col) * kLd + row;
}

// Programmatic dependent launch. Wait blocks until the grids this one depends
// on have completed and their memory is visible; a kernel must call it before
// its first global read of data another kernel may produce, and before its
// first global write. Launching dependents early only lets the next grid be
// scheduled; that grid still waits for this one to complete.
__device__ __forceinline__ void GridDependencyWait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void LaunchDependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Prefetch into L2 is always safe before GridDependencyWait: L2 is the point
// of coherence, so a line the previous grid writes later is still seen.
__device__ __forceinline__ void PrefetchL2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

}  // namespace jitgemm
