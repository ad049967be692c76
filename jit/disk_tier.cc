#include "jit/disk_tier.h"

#include <cstdlib>

#include <cuda.h>

#include "absl/strings/numbers.h"
#include "jit/nvrtc_compiler.h"

namespace jitgemm::jit {

absl::StatusOr<int> NvrtcVersionForKey() {
  absl::StatusOr<int> v = NvrtcVersion();
  if (v.ok()) return v;
  if (const char* env = std::getenv("JITGEMM_NVRTC_VERSION")) {
    int parsed = 0;
    if (absl::SimpleAtoi(env, &parsed)) return parsed;
  }
  // Keys name the compiler that made the cubin; built against CUDA 13.0.
  return CUDA_VERSION;
}

absl::StatusOr<std::string> DiskTierGetOrCreate(
    const std::string& key_text, absl::FunctionRef<absl::StatusOr<std::string>()> create) {
  // Replaced by the shared on-disk cache once cache/ lands.
  return create();
}

}  // namespace jitgemm::jit
