// wgmma.mma_async.m64nNk16 for N = 16 and 32, both operands K-major in
// shared memory (descriptors), fp32 accumulators, fp16 or bf16 inputs: the
// product of small_m's wgmma path. Written by hand, apart from the generated
// wgmma.cuh (the sm90 family's N values, with transposed operands), because
// it must keep its exact instruction form (predicated scale-d, no transpose).
// sm_90a only; compiles to nothing below sm_90.
#pragma once

#include "jitgemm/common/types.cuh"

namespace jitgemm {
namespace sm90 {

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
__device__ __forceinline__ void WgmmaNarrow(float (&d)[BN / 2], unsigned long long a,
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

}  // namespace sm90
}  // namespace jitgemm
