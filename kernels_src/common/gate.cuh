// Whether a spec is gated (SwiGLU, GeGLU): the specialiser writes
// `static constexpr int kGate = 1;` only for problems whose B holds the
// [gate | up] halves (docs/gated.md); every other spec lacks the field, and
// GateOf<S>::value is then 0.
#pragma once

namespace jitgemm {

template <class S, class = void>
struct GateOf {
  static constexpr int value = 0;
};
template <class S>
struct GateOf<S, decltype(void(S::kGate))> {
  static constexpr int value = S::kGate;
};

}  // namespace jitgemm
