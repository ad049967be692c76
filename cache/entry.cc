#include "cache/entry.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "xxhash.h"

namespace jitgemm::cache {
namespace {

// Fixed little-endian encoding, so a bundle written on one host reads on any.
void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

absl::Status Corrupt(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("corrupt cache entry: ", what));
}

}  // namespace

const char* EntryKindName(EntryKind kind) {
  switch (kind) {
    case EntryKind::kCubin:
      return "cubin";
    case EntryKind::kTuningRecord:
      return "tuning";
  }
  return "unknown";
}

std::string EncodeEntry(const CacheKey& key, EntryKind kind, std::string_view payload) {
  std::string out;
  out.reserve(kEntryHeaderBytes + key.text.size() + payload.size() + kEntryTrailerBytes);
  out.append(kEntryMagic, sizeof(kEntryMagic));
  PutU32(&out, kEntryFormatVersion);
  PutU32(&out, static_cast<uint32_t>(kind));
  PutU32(&out, static_cast<uint32_t>(key.text.size()));
  PutU32(&out, 0);
  PutU64(&out, payload.size());
  out.append(key.text);
  out.append(payload);
  PutU64(&out, XXH3_64bits(out.data(), out.size()));
  return out;
}

absl::StatusOr<EntryView> ParseEntry(std::string_view bytes) {
  const uint64_t size = bytes.size();
  if (size == 0) return Corrupt("empty file");
  if (size < kEntryHeaderBytes + kEntryTrailerBytes) {
    return Corrupt(absl::StrCat("only ", size, " bytes, shorter than a header"));
  }
  const char* p = bytes.data();
  if (std::memcmp(p, kEntryMagic, sizeof(kEntryMagic)) != 0) return Corrupt("bad magic");
  EntryView view;
  view.version = GetU32(p + 8);
  if (view.version > kEntryFormatVersion) {
    return Corrupt(absl::StrCat("format version ", view.version, " is newer than this library's ",
                                kEntryFormatVersion));
  }
  if (view.version != kEntryFormatVersion) {
    return Corrupt(absl::StrCat("unknown format version ", view.version));
  }
  uint32_t kind = GetU32(p + 12);
  if (kind > static_cast<uint32_t>(EntryKind::kTuningRecord)) {
    return Corrupt(absl::StrCat("unknown kind ", kind));
  }
  view.kind = static_cast<EntryKind>(kind);
  if (GetU32(p + 20) != 0) return Corrupt("reserved header field is not zero");
  // Compare each claimed size with what is left before adding anything, so
  // no sum can overflow and no claim can exceed the bytes at hand.
  const uint64_t body = size - kEntryHeaderBytes - kEntryTrailerBytes;
  const uint64_t key_size = GetU32(p + 16);
  const uint64_t payload_size = GetU64(p + 24);
  if (key_size > body) {
    return Corrupt(absl::StrCat("key text of ", key_size, " bytes claimed, ", body, " present"));
  }
  if (payload_size > body - key_size) {
    return Corrupt(
        absl::StrCat("payload of ", payload_size, " bytes claimed, ", body - key_size, " present"));
  }
  if (key_size + payload_size != body) {
    return Corrupt(absl::StrCat(body - key_size - payload_size, " unexplained trailing bytes"));
  }
  const uint64_t stored = GetU64(p + size - kEntryTrailerBytes);
  const uint64_t actual = XXH3_64bits(p, size - kEntryTrailerBytes);
  if (stored != actual) return Corrupt("checksum mismatch");
  view.key_text = bytes.substr(kEntryHeaderBytes, key_size);
  view.payload = bytes.substr(kEntryHeaderBytes + key_size, payload_size);
  return view;
}

namespace {

absl::StatusOr<std::string> PayloadFor(const absl::StatusOr<EntryView>& view,
                                       const CacheKey& expected) {
  if (!view.ok()) return view.status();
  if (view->key_text != expected.text) {
    // A renamed or swapped file, or a 128-bit collision: never serve it.
    return Corrupt(absl::StrCat("entry holds another key's text (wanted ", expected.Hex(), ")"));
  }
  return std::string(view->payload);
}

}  // namespace

absl::StatusOr<std::string> DecodeEntry(std::string_view file_bytes, const CacheKey& expected) {
  return PayloadFor(ParseEntry(file_bytes), expected);
}

absl::StatusOr<std::string> DecodeEntry(std::string_view file_bytes, const CacheKey& expected,
                                        EntryKind expected_kind) {
  absl::StatusOr<EntryView> view = ParseEntry(file_bytes);
  if (view.ok() && view->kind != expected_kind) {
    return Corrupt(absl::StrCat("entry is a ", EntryKindName(view->kind), ", wanted a ",
                                EntryKindName(expected_kind)));
  }
  return PayloadFor(view, expected);
}

}  // namespace jitgemm::cache
