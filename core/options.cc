#include "jitgemm/options.h"

#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "core/option_names.h"

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
  if (auto backend = ParseBackendPolicy(Env("JITGEMM_BACKEND"))) o.backend = *backend;
  if (auto tuning = ParseTuningPolicy(Env("JITGEMM_TUNING"))) o.tuning = *tuning;
  const std::string pdl = Env("JITGEMM_PDL");
  if (pdl == "0" || pdl == "off" || pdl == "false") o.pdl = false;
  const std::string constant_b = Env("JITGEMM_CONSTANT_B");
  if (constant_b == "1" || constant_b == "on" || constant_b == "true") o.constant_b = true;
  if (auto regime = ParseTimingRegime(Env("JITGEMM_REGIME"))) o.regime = *regime;
  if (const char* arch = std::getenv("JITGEMM_ARCH"); arch && *arch) o.arch = arch;
  return o;
}

}  // namespace jitgemm
