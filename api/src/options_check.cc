#include "api/src/options_check.h"

#include "absl/strings/str_cat.h"
#include "jit/launcher.h"

namespace jitgemm {

absl::Status ValidateOptions(const Options& o) {
  const int backend = static_cast<int>(o.backend);
  if (backend < 0 || backend > static_cast<int>(BackendPolicy::kCublasOnly)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.backend: must be auto, jit only or cublas only, got ", backend));
  }
  const int tuning = static_cast<int>(o.tuning);
  if (tuning < 0 || tuning > static_cast<int>(TuningPolicy::kExhaustive)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.tuning: must be heuristic, fast or exhaustive, got ", tuning));
  }
  const int a = o.pointer_alignment;
  if (a != 1 && a != 2 && a != 4 && a != 8 && a != 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.pointer_alignment: must be 1, 2, 4, 8 or 16, got ", a));
  }
  if (!(o.win_margin >= 0.0 && o.win_margin < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.win_margin: must be in [0, 1), got ", o.win_margin));
  }
  const int regime = static_cast<int>(o.regime);
  if (regime < 0 || regime > static_cast<int>(TimingRegime::kResident)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.regime: must be auto, streaming or resident, got ", regime));
  }
  if (!o.arch.empty()) {
    auto sm = jit::ParseArch(o.arch);
    if (!sm.ok())
      return absl::InvalidArgumentError(absl::StrCat("options.", sm.status().message()));
  }
  return absl::OkStatus();
}

}  // namespace jitgemm
