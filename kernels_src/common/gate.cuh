// Gated problems (SwiGLU, GeGLU; docs/gated.md): whether a spec is gated,
// and the value every gated epilogue stores,
//
//   D[m, n] = act(alpha * gate + bias[n]) * (alpha * up + bias[N + n]).
//
// The specialiser writes `static constexpr int kGate = 1;` only for problems
// whose B holds the [gate | up] halves; every other spec lacks the field, and
// GateOf<S>::value is then 0.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/types.cuh"

namespace jitgemm {

template <class S, class = void>
struct GateOf {
  static constexpr int value = 0;
};
template <class S>
struct GateOf<S, decltype(void(S::kGate))> {
  static constexpr int value = S::kGate;
};

// The bias of output column n of batch `batch`: bias[n] on the gate,
// bias[N + n] on the up value; both 0 without a bias (or default-built).
template <class S>
struct GateBias {
  float gate = 0.f, up = 0.f;

  GateBias() = default;
  __device__ __forceinline__ GateBias(const GemmArgs& args, int batch, int n) {
    if (S::kBias == 1) {
      using D = typename S::ElementD;
      const D* bias = static_cast<const D*>(args.bias) + static_cast<int64>(batch) * S::kStrideBias;
      gate = ToFloat(bias[n]);
      up = ToFloat(bias[S::kN + n]);
    }
  }
};

// The value D stores for accumulators `gate` and `up` of one output column.
template <class S>
__device__ __forceinline__ float GatedValue(const GemmArgs& args, float gate, float up,
                                            const GateBias<S>& bias) {
  return ActivateFor<typename S::ElementD, S::kAct>(args.alpha * gate + bias.gate) *
         (args.alpha * up + bias.up);
}

}  // namespace jitgemm
