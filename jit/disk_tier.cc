#include "jit/disk_tier.h"

#include <cuda.h>

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "cache/disk_cache.h"
#include "cache/key.h"
#include "jit/nvrtc_compiler.h"

namespace jitgemm::jit {

absl::StatusOr<int> NvrtcVersionForKey() {
  // A deployment that states its NVRTC version skips loading NVRTC (several
  // milliseconds) when every kernel is cached; Compile checks the claim.
  if (const char* env = std::getenv("JITGEMM_NVRTC_VERSION")) {
    int parsed = 0;
    if (absl::SimpleAtoi(env, &parsed)) return parsed;
  }
  absl::StatusOr<int> v = NvrtcVersion();
  if (v.ok()) return v;
  // Without NVRTC nothing can be compiled, so keys only serve lookups of a
  // warmed cache, made by the NVRTC of the toolkit the library was built with.
  return CUDA_VERSION;
}

absl::StatusOr<std::string> DiskTierGetOrCreate(
    const std::string& key_text, absl::FunctionRef<absl::StatusOr<std::string>()> create) {
  return cache::DiskCache::Default()->GetOrCreate(cache::MakeCacheKey(key_text),
                                                  cache::EntryKind::kCubin, create);
}

}  // namespace jitgemm::jit
