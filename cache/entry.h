// Entry: the byte format of one file in the disk cache.
//
// An entry is immutable and self-describing, so a reader needs nothing but the
// bytes and the key it expects:
//
//   offset  size  field
//        0     8  magic "JGMCACHE"
//        8     4  format version (little-endian u32; this library writes 1)
//       12     4  kind (EntryKind)
//       16     4  key text length K
//       20     4  reserved, zero
//       24     8  payload size P
//       32     K  key text (CacheKey::text)
//     32+K     P  payload (a cubin, or a tuning record's JSON)
//   32+K+P     8  XXH3-64 of all bytes before it
//
// Any disagreement (short file, bad magic, a version from the future, sizes
// that do not add up to the file, checksum, a key text other than the one
// asked for) is DataLoss: the caller treats it as a miss and replaces the
// entry. Sizes are checked against the bytes at hand before anything is
// copied, so a header claiming 2^40 bytes costs nothing.
//
// Thread safety: pure functions.
//
// Example:
//   std::string file = EncodeEntry(key, EntryKind::kCubin, cubin);
//   absl::StatusOr<std::string> back = DecodeEntry(file, key);  // == cubin
#ifndef JITGEMM_CACHE_ENTRY_H_
#define JITGEMM_CACHE_ENTRY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cache/key.h"

namespace jitgemm::cache {

enum class EntryKind { kCubin = 0, kTuningRecord = 1 };

// "cubin" or "tuning": the directory name of the kind on disk.
const char* EntryKindName(EntryKind kind);

inline constexpr char kEntryMagic[8] = {'J', 'G', 'M', 'C', 'A', 'C', 'H', 'E'};
inline constexpr uint32_t kEntryFormatVersion = 1;
inline constexpr size_t kEntryHeaderBytes = 32;
inline constexpr size_t kEntryTrailerBytes = 8;
// Readers refuse larger files before reading them: far above any cubin or
// tuning record, far below what would hurt to allocate.
inline constexpr uint64_t kMaxEntryFileBytes = uint64_t{256} << 20;

// A decoded entry whose views point into the bytes it was parsed from.
struct EntryView {
  uint32_t version = 0;
  EntryKind kind = EntryKind::kCubin;
  std::string_view key_text;
  std::string_view payload;
};

// The file bytes for `payload` under `key`.
std::string EncodeEntry(const CacheKey& key, EntryKind kind, std::string_view payload);

// Checks everything but which key the entry is for. DataLoss on any defect.
// For tools (jitgemm-cache verify) and for explaining a miss by key text.
absl::StatusOr<EntryView> ParseEntry(std::string_view file_bytes);

// The payload, if `file_bytes` is a sound entry for exactly `expected.text`.
absl::StatusOr<std::string> DecodeEntry(std::string_view file_bytes, const CacheKey& expected);
// As above, and the entry must also be of `expected_kind`.
absl::StatusOr<std::string> DecodeEntry(std::string_view file_bytes, const CacheKey& expected,
                                        EntryKind expected_kind);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_ENTRY_H_
