#include "jitgemm/options.h"

#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"

namespace jitgemm {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? absl::AsciiStrToLower(v) : std::string();
}

}  // namespace

Options Options::FromEnvironment() {
  Options o;
  const std::string jit = Env("JITGEMM_JIT");
  if (jit == "off" || jit == "0" || jit == "false") o.jit_enabled = false;
  const std::string backend = Env("JITGEMM_BACKEND");
  if (backend == "jit") o.backend = BackendPolicy::kJitOnly;
  if (backend == "cublas") o.backend = BackendPolicy::kCublasOnly;
  const std::string tuning = Env("JITGEMM_TUNING");
  if (tuning == "fast") o.tuning = TuningPolicy::kFast;
  if (tuning == "exhaustive") o.tuning = TuningPolicy::kExhaustive;
  if (tuning == "heuristic") o.tuning = TuningPolicy::kHeuristic;
  const std::string pdl = Env("JITGEMM_PDL");
  if (pdl == "0" || pdl == "off" || pdl == "false") o.pdl = false;
  const std::string constant_b = Env("JITGEMM_CONSTANT_B");
  if (constant_b == "1" || constant_b == "on" || constant_b == "true") o.constant_b = true;
  const std::string regime = Env("JITGEMM_REGIME");
  if (regime == "streaming") o.regime = TimingRegime::kStreaming;
  if (regime == "resident") o.regime = TimingRegime::kResident;
  if (const char* arch = std::getenv("JITGEMM_ARCH"); arch && *arch) o.arch = arch;
  return o;
}

}  // namespace jitgemm
