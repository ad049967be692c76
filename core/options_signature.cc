#include "core/options_signature.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace jitgemm {

std::string OptionsSignature(const Options& o) {
  return absl::StrCat("backend=", static_cast<int>(o.backend),
                      " tuning=", static_cast<int>(o.tuning), " tf32=", o.allow_tf32,
                      " pdl=", o.pdl, o.constant_b ? " constb=1" : "",
                      // Absent for auto, so keys made before regimes existed still
                      // name the auto decision (the tuner retunes a record that
                      // was decided in fewer regimes than it now needs).
                      o.regime == TimingRegime::kStreaming  ? " regime=streaming"
                      : o.regime == TimingRegime::kResident ? " regime=resident"
                                                            : "",
                      " align=", o.pointer_alignment, " margin=", o.win_margin);
}

}  // namespace jitgemm
