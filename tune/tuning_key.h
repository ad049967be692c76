// The one recipe for a tuning record's key: problem signature + options
// signature + the environment the timings hold in. The candidate list is left
// out, so a new candidate set does not orphan old decisions (a record whose
// winner is no longer a candidate is retuned, see tuner.h).
//
// Thread safety: pure functions, except CurrentTuningEnvironment, which asks
// the driver and cuBLASLt (thread-safe calls).
#ifndef JITGEMM_TUNE_TUNING_KEY_H_
#define JITGEMM_TUNE_TUNING_KEY_H_

#include <string>

#include "cache/tuning_record.h"
#include "jit/driver_api.h"
#include "jit/launcher.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm::tune {

// Where a decision was measured; a stored decision holds only where all of
// it is the same.
struct TuningEnvironment {
  std::string device_name;
  int sm_count = 0;
  int driver_version = 0;
  int cublas_version = 0;
  std::string library_version;  // version + ABI + hash of all kernel sources
};

// The environment of the current device.
TuningEnvironment CurrentTuningEnvironment(const jit::DriverApi& api,
                                           const jit::DeviceContext& device);

// "jitgemm-tuning-key v1\nproblem=<signature>\n<options signature>\ndevice=..."
// Stored records are keyed by this text: it must not change without a reason.
std::string TuningKeyText(const std::string& problem_signature,
                          const std::string& options_signature, const TuningEnvironment& env);
// Same for a canonical problem and its options.
std::string TuningKeyText(const GemmProblem& canonical, const Options& options,
                          const TuningEnvironment& env);

// A record made in `env`, outcome fields empty (the tuner fills them).
cache::TuningRecord RecordIn(const TuningEnvironment& env);

}  // namespace jitgemm::tune

#endif  // JITGEMM_TUNE_TUNING_KEY_H_
