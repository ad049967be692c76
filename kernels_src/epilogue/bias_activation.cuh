// The epilogue alone, for a product cuBLAS already wrote into D:
//   D[b][i][j] = act(D[b][i][j] + bias[b][i or j])
// in place, in fp32, stored in D's type. One thread per element along D's
// contiguous dimension, so loads and stores coalesce for either layout.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/types.cuh"

namespace jitgemm {
namespace epilogue {

template <class S>
__global__ void __launch_bounds__(S::kThreads) BiasActivation(const GemmArgs args) {
  // Along the contiguous dimension of D: columns when row-major.
  constexpr int kInner = S::kRowD ? S::kN : S::kM;
  constexpr int kOuter = S::kRowD ? S::kM : S::kN;
  const int inner = blockIdx.x * S::kThreads + threadIdx.x;
  const int outer = blockIdx.y;
  const int batch = blockIdx.z;
  if (S::kPdl) GridDependencyWait();
  if (inner >= kInner || outer >= kOuter) return;
  const int row = S::kRowD ? outer : inner;
  const int col = S::kRowD ? inner : outer;
  typename S::ElementD* d =
      static_cast<typename S::ElementD*>(args.d) + static_cast<int64>(batch) * S::kStrideD;
  const int64 at = Offset<S::kRowD, S::kLdd>(row, col);
  float v = ToFloat(d[at]);
  if (S::kBias != 0) {
    const typename S::ElementD* bias = static_cast<const typename S::ElementD*>(args.bias) +
                                       static_cast<int64>(batch) * S::kStrideBias;
    v += ToFloat(bias[S::kBias == 1 ? col : row]);
  }
  d[at] = FromFloat<typename S::ElementD>(Activate<S::kAct>(v));
}

}  // namespace epilogue
}  // namespace jitgemm
