#include "cache/key.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "xxhash.h"

namespace jitgemm::cache {

std::string CacheKey::Hex() const { return absl::StrFormat("%016x%016x", hi, lo); }

CacheKey MakeCacheKey(std::string canonical_text) {
  CacheKey key;
  XXH128_hash_t h = XXH3_128bits(canonical_text.data(), canonical_text.size());
  key.hi = h.high64;
  key.lo = h.low64;
  key.text = std::move(canonical_text);
  return key;
}

}  // namespace jitgemm::cache
