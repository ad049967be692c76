// The bundle manifest: jitgemm-bundle.json, the list a bundle carries of
// what it holds (creator, time, selection, the arch / NVRTC / ABI its keys
// were made for, and every entry with its size and checksum). A signature over
// its exact bytes (cache/bundle_signature.h) vouches for every entry it lists.
//
// Reading one is bounded (cache/json_fields.h): at most kMaxBundleManifestBytes
// and kMaxBundleManifestDepth levels, no repeated or unknown keys.
//
// Thread safety: a value type.
#ifndef JITGEMM_CACHE_BUNDLE_MANIFEST_H_
#define JITGEMM_CACHE_BUNDLE_MANIFEST_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "cache/env.h"

namespace jitgemm::cache {

inline constexpr char kBundleManifestFile[] = "jitgemm-bundle.json";
inline constexpr char kBundleReadmeFile[] = "README.txt";
// The Ed25519 signature over the manifest's exact bytes (cache/bundle_signature.h).
inline constexpr char kBundleSignatureFile[] = "jitgemm-bundle.sig";
inline constexpr char kBundleFormat[] = "jitgemm-bundle-1";
// Key-text fields whose values a bundle's manifest lists by default (the
// kernel keys' "abi=", "nvrtc=", "arch=" and "sources=" lines).
inline const std::vector<std::string>& DefaultBundleKeyFields();

// About 100 bytes per listed entry: room for a million entries.
inline constexpr uint64_t kMaxBundleManifestBytes = uint64_t{128} << 20;
// The deepest a sound manifest goes is 3 ({"kinds":{"cubin":{...}}}).
inline constexpr int kMaxBundleManifestDepth = 8;

struct BundleFile {
  uint64_t bytes = 0;
  std::string checksum;  // EntryChecksumHex
};

struct KindTotals {
  uint64_t entries = 0;
  uint64_t bytes = 0;
};

struct BundleManifest {
  std::string format = kBundleFormat;
  std::string created_by;              // e.g. "jitgemm-cache 0.1.0"
  std::string created_at;              // RFC 3339, UTC
  std::string library_version;         // of the library that made the bundle
  std::string selection;               // e.g. "whole cache" or "3 manifests for sm_90a"
  std::vector<std::string> manifests;  // file names of the manifests selected by
  // Distinct values of key-text fields among the entries: "arch" ->
  // {"sm_90a"}, "nvrtc" -> {"13000"}, "abi" -> {"1"}, "sources" -> {...}.
  std::map<std::string, std::vector<std::string>> key_fields;
  std::map<std::string, KindTotals> kinds;  // "cubin", "tuning"
  uint64_t entries = 0;
  uint64_t bytes = 0;
  std::map<std::string, BundleFile> files;  // by relative path

  std::string ToJson() const;
  // InvalidArgument naming the field; never throws.
  static absl::StatusOr<BundleManifest> FromJson(std::string_view json);
};

// The README.txt text for `manifest`.
std::string BundleReadme(const BundleManifest& manifest);

inline const std::vector<std::string>& DefaultBundleKeyFields() {
  static const std::vector<std::string>* const fields =
      new std::vector<std::string>{"abi", "nvrtc", "arch", "sources"};
  return *fields;
}

struct BundleManifestFiles {
  std::string manifest;
  std::optional<std::string> signature;  // absent: an unsigned bundle
};
// Reads <dir>/jitgemm-bundle.json and, if present, jitgemm-bundle.sig: never
// through a symlink, never a FIFO or device, at most kMaxBundleManifestBytes,
// and owned and moded as the folder-trust rule asks of a read-only root
// (cache/folder_trust.h). NotFound if there is no manifest.
absl::StatusOr<BundleManifestFiles> ReadBundleManifestFiles(Env* env, const std::string& dir);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_BUNDLE_MANIFEST_H_
