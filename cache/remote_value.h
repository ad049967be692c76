// RemoteValue: the bytes stored under one key in the remote tier.
//
// A value wraps the disk entry (cache/entry.h) unchanged, so a remote hit is
// checked exactly as a disk entry is (header, key text, kind, checksum), and
// adds an HMAC-SHA256 made with the fleet's shared secret:
//
//   offset  size  field
//        0     8  magic "JGMREMOT"
//        8     4  format version (little-endian u32; this library writes 1)
//       12     4  flags: bit 0 set when the value is signed
//       16    32  HMAC-SHA256(secret, bytes 0..15 || entry), zero if unsigned
//       48     E  the entry, as a disk cache file holds it
//
// A reader holding a secret accepts only values signed with it; a reader
// without one accepts signed and unsigned values alike (it cannot check the
// MAC, and the entry's checksum only catches accidents). Whoever can write to
// an unauthenticated server can therefore choose the code every reader runs:
// docs/cache.md says so.
//
// Thread safety: pure functions.
#ifndef JITGEMM_CACHE_REMOTE_VALUE_H_
#define JITGEMM_CACHE_REMOTE_VALUE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cache/entry.h"
#include "cache/key.h"

namespace jitgemm::cache {

inline constexpr char kRemoteMagic[8] = {'J', 'G', 'M', 'R', 'E', 'M', 'O', 'T'};
inline constexpr uint32_t kRemoteFormatVersion = 1;
inline constexpr size_t kRemoteHeaderBytes = 48;
inline constexpr uint32_t kRemoteSignedFlag = 1;

// The value for `payload` under `key`, signed when `secret` is not empty.
std::string EncodeRemoteValue(const CacheKey& key, EntryKind kind, std::string_view payload,
                              std::string_view secret);

// The verified disk entry inside `value`: DataLoss when malformed (a short or
// unknown header, flags other than 0 or 1, an unsigned value whose MAC
// field is not zero, an entry that fails ParseEntry
// or is for another key or kind), PermissionDenied when `secret` is set and
// the value is unsigned or its MAC differs. Sizes are checked against the
// bytes at hand before anything is copied.
absl::StatusOr<std::string> DecodeRemoteValue(std::string_view value, const CacheKey& expected,
                                              EntryKind expected_kind, std::string_view secret);

// The entry bytes of a value whose envelope is well formed, without the key
// or MAC checks; for tools and the fuzz target.
absl::StatusOr<std::string_view> RemoteValueEntry(std::string_view value, bool* is_signed);

// The Redis key of an entry and of its fleet compile lock:
// "jitgemm:v1:<kind>:<hex>" and "jitgemm:v1:lock:<kind>:<hex>".
std::string RemoteEntryKey(const CacheKey& key, EntryKind kind);
std::string RemoteLockKey(const CacheKey& key, EntryKind kind);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_REMOTE_VALUE_H_
