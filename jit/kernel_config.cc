#include "jit/kernel_config.h"

#include "absl/strings/str_format.h"

namespace jitgemm::jit {

const char* FamilyName(Family family) {
  switch (family) {
    case Family::kSimt:
      return "simt";
    case Family::kSm80:
      return "sm80";
    case Family::kSmallM:
      return "small_m";
    case Family::kElementwise:
      return "elementwise";
    case Family::kSm90:
      return "sm90";
    case Family::kGate:
      return "gate";
  }
  return "?";
}

std::string KernelConfig::ToString() const {
  // eb, xc, ck, cm, pp and su appear only when set, so keys of configs that predate them stay
  // valid.
  return absl::StrFormat(
      "%s bm=%d bn=%d bk=%d wm=%d wn=%d st=%d sk=%d pdl=%d rm=%d%s%s%s%s%s%s", FamilyName(family),
      block_m, block_n, block_k, warps_m, warps_n, stages, split_k, pdl, runtime_m,
      early_b ? " eb=1" : "", x_copy > 0 ? absl::StrFormat(" xc=%d", x_copy) : "",
      cluster_k ? " ck=1" : "", cluster_m > 1 ? absl::StrFormat(" cm=%d", cluster_m) : "",
      ping_pong ? " pp=1" : "", split_units > 0 ? absl::StrFormat(" su=%d", split_units) : "");
}

}  // namespace jitgemm::jit
