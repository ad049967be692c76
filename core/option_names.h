// The text names of Options' enums, one spelling everywhere: environment
// variables (Options::FromEnvironment), manifests and the tools' flags.
//
// Thread safety: pure functions.
#ifndef JITGEMM_CORE_OPTION_NAMES_H_
#define JITGEMM_CORE_OPTION_NAMES_H_

#include <optional>
#include <string_view>

#include "jitgemm/options.h"

namespace jitgemm {

// "auto", "jit", "cublas".
const char* BackendPolicyName(BackendPolicy backend);
std::optional<BackendPolicy> ParseBackendPolicy(std::string_view text);

// "heuristic", "fast", "exhaustive".
const char* TuningPolicyName(TuningPolicy tuning);
std::optional<TuningPolicy> ParseTuningPolicy(std::string_view text);

// "auto", "streaming", "resident".
const char* TimingRegimeName(TimingRegime regime);
std::optional<TimingRegime> ParseTimingRegime(std::string_view text);

}  // namespace jitgemm

#endif  // JITGEMM_CORE_OPTION_NAMES_H_
