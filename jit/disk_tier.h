// The seam between the kernel store and the on-disk cache (cache/): look a
// key up on disk, else create it once across processes and store it.
#ifndef JITGEMM_JIT_DISK_TIER_H_
#define JITGEMM_JIT_DISK_TIER_H_

#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace jitgemm::jit {

// The NVRTC version that enters every key, or the version the cache was
// warmed with when NVRTC is absent (JITGEMM_NVRTC_VERSION), so a process
// without NVRTC still finds a warmed cache.
absl::StatusOr<int> NvrtcVersionForKey();

absl::StatusOr<std::string> DiskTierGetOrCreate(
    const std::string& key_text, absl::FunctionRef<absl::StatusOr<std::string>()> create);

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_DISK_TIER_H_
