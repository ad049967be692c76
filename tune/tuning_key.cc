#include "tune/tuning_key.h"

#include <cublasLt.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/options_signature.h"
#include "core/problem_signature.h"
#include "jit/specializer.h"

namespace jitgemm::tune {

TuningEnvironment CurrentTuningEnvironment(const jit::DriverApi& api,
                                           const jit::DeviceContext& device) {
  TuningEnvironment env;
  env.device_name = device.name;
  env.sm_count = device.target.multiprocessors;
  api.cuDriverGetVersion(&env.driver_version);
  env.cublas_version = static_cast<int>(cublasLtGetVersion());
  env.library_version = absl::StrCat(JITGEMM_VERSION_STRING, "+abi", jit::kLibraryAbiVersion, "+",
                                     jit::EmbeddedSourcesHash());
  return env;
}

std::string TuningKeyText(const std::string& problem_signature,
                          const std::string& options_signature, const TuningEnvironment& env) {
  return absl::StrCat("jitgemm-tuning-key v1\nproblem=", problem_signature, "\n", options_signature,
                      "\ndevice=", env.device_name, " sms=", env.sm_count,
                      " driver=", env.driver_version, " cublas=", env.cublas_version,
                      " lib=", env.library_version, "\n");
}

std::string TuningKeyText(const GemmProblem& canonical, const Options& options,
                          const TuningEnvironment& env) {
  return TuningKeyText(ProblemSignature(canonical), OptionsSignature(options), env);
}

cache::TuningRecord RecordIn(const TuningEnvironment& env) {
  cache::TuningRecord r;
  r.device_name = env.device_name;
  r.sm_count = env.sm_count;
  r.driver_version = env.driver_version;
  r.cublas_version = env.cublas_version;
  r.library_version = env.library_version;
  return r;
}

}  // namespace jitgemm::tune
