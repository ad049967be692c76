// The last step of every small_m store: four columns of one row through the
// epilogue (or a gated problem's gate) into D.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/gate.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/small_m/ptx.cuh"

namespace jitgemm {
namespace small_m {

// Stores 4 consecutive columns (n .. n+3) of row m, value(j) giving column
// n + j's final value; one vector store where D is row-major and aligned and
// all 4 exist, element stores otherwise.
template <class S, class Value>
__device__ __forceinline__ void Store4(const GemmArgs& args, int batch, int m, int n,
                                       const Value& value) {
  using TD = typename S::ElementD;
  constexpr bool kNFull = S::kN % 4 == 0;
  constexpr bool kVec2 = S::kRowD && sizeof(TD) == 2 && S::kAlignD >= 8;
  constexpr bool kVec4 = S::kRowD && sizeof(TD) == 4 && S::kAlignD >= 16;
  auto scalar = [&]() {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (n + j < S::kN) StoreD<S>(args, batch, m, n + j, value(j));
    }
  };
  if constexpr (kVec2 || kVec4) {
    if (kNFull || n + 3 < S::kN) {
      float e[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) e[j] = value(j);
      TD* d = static_cast<TD*>(args.d) + static_cast<int64>(batch) * S::kStrideD +
              Offset<true, S::kLdd>(m, n);
      if constexpr (kVec2) {
        const unsigned lo = Pack2<TD>(e[0], e[1]);
        const unsigned hi = Pack2<TD>(e[2], e[3]);
        asm volatile("st.global.v2.u32 [%0], {%1,%2};" ::"l"(d), "r"(lo), "r"(hi) : "memory");
      } else {
        StoreF4(reinterpret_cast<float*>(d), e[0], e[1], e[2], e[3]);
      }
    } else {
      scalar();
    }
  } else {
    scalar();
  }
}

// Columns n .. n+3 of row m after the epilogue.
template <class S>
__device__ __forceinline__ void StoreOut4(const GemmArgs& args, int batch, int m, int n,
                                          const float (&v)[4]) {
  Store4<S>(args, batch, m, n,
            [&](int j) { return EpilogueValue<S>(args, batch, m, n + j, v[j]); });
}

// Output columns n .. n+3 of row m of a gated problem (docs/gated.md):
// act(alpha * gate + bias[n + j]) * (alpha * up + bias[N + n + j]).
template <class S>
__device__ __forceinline__ void StoreGated4(const GemmArgs& args, int batch, int m, int n,
                                            const float (&gate)[4], const float (&up)[4]) {
  static_assert(!S::kHasC && S::kBias != 2, "gated problems take no C and no per-row bias");
  Store4<S>(args, batch, m, n, [&](int j) {
    return GatedValue<S>(args, gate[j], up[j], GateBias<S>(args, batch, n + j));
  });
}

}  // namespace small_m
}  // namespace jitgemm
