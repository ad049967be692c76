// Validation of Options before anything uses them: a plan, or a manifest entry
// recorded through the C ABI (a value ParseManifest would refuse must never be
// written, or the manifest could not be read back and later recordings into it
// would be refused).
//
// Thread safety: a pure function.
#ifndef JITGEMM_API_SRC_OPTIONS_CHECK_H_
#define JITGEMM_API_SRC_OPTIONS_CHECK_H_

#include "absl/status/status.h"
#include "jitgemm/options.h"

namespace jitgemm {

// InvalidArgument naming the field ("options.regime: ..."): pointer_alignment
// not 1, 2, 4, 8 or 16; win_margin outside [0, 1); an enum value out of range;
// an arch that is not sm_XX.
absl::Status ValidateOptions(const Options& options);

}  // namespace jitgemm

#endif  // JITGEMM_API_SRC_OPTIONS_CHECK_H_
