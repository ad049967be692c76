// CacheKey: the content address of one cache entry.
//
// A key is XXH3-128 over a canonical text that names everything the entry
// depends on (library ABI version, NVRTC version, exact arch, kernel family,
// config, problem signature, hash of the embedded sources, compile options),
// and nothing it must not depend on (paths, hostnames, time). The text travels
// with the key and is stored inside each entry, so a hash collision or a
// swapped file is detected by comparing texts, and a miss can be explained by
// diffing the text against the one on disk.
//
// The hash is a pure function of the bytes of the text, so a key computed
// offline (jitgemm-warmup on a build machine) equals the one computed at run
// time on the target device.
//
// Thread safety: CacheKey is a value type; MakeCacheKey is a pure function.
//
// Example:
//   CacheKey key = MakeCacheKey("abi=1\nnvrtc=13000\narch=sm_90a\n...");
//   std::string file_name = key.Hex() + ".bin";
#ifndef JITGEMM_CACHE_KEY_H_
#define JITGEMM_CACHE_KEY_H_

#include <cstdint>
#include <string>

namespace jitgemm::cache {

struct CacheKey {
  // The canonical text the hash was computed from.
  std::string text;
  // XXH3-128 of `text`: high and low 64-bit halves.
  uint64_t hi = 0, lo = 0;

  // 32 lowercase hex characters, `hi` first; the entry's file name stem.
  std::string Hex() const;

  friend bool operator==(const CacheKey&, const CacheKey&) = default;
};

// Hashes `canonical_text` with XXH3-128 and keeps the text.
CacheKey MakeCacheKey(std::string canonical_text);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_KEY_H_
