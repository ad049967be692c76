// Entry listing: the published entry files of a cache root or a bundle
// directory (cache/layout.h), and the checks that tie an entry's bytes to the
// place it was found. DiskCache's eviction and verification, `jitgemm-cache`
// and the bundle code all list entries through here.
//
// Thread safety: pure functions, or as the Env they are given.
#ifndef JITGEMM_CACHE_ENTRY_LISTING_H_
#define JITGEMM_CACHE_ENTRY_LISTING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cache/entry.h"
#include "cache/env.h"
#include "cache/folder_trust.h"
#include "cache/key.h"

namespace jitgemm::cache {

// One published entry file under a cache root or inside a bundle.
struct EntryFileInfo {
  EntryKind kind = EntryKind::kCubin;
  std::string relative_path;  // "v1/cubin/ab/<32 hex>.bin"
  std::string path;           // on disk; for an archive, "<archive>:<member>"
  uint64_t size = 0;
  absl::Time mtime = absl::InfinitePast();
  // Why the file fails the folder-trust rule for entries (another user's,
  // writable by every user); empty if it passes. Readers treat it as corrupt.
  std::string untrusted;
};

// "v1/<kind>/<first 2 hex>/<32 hex>.bin".
std::string EntryRelativePath(EntryKind kind, const CacheKey& key);
// The kind of "v1/<kind>/<2 hex>/<32 hex>.bin", whether or not the shard
// matches the name; nullopt for anything else.
std::optional<EntryKind> EntryPathKind(absl::string_view relative_path);
// The kind of a well-formed relative entry path (shard and name agree);
// nullopt for anything else.
std::optional<EntryKind> ParseEntryRelativePath(absl::string_view relative_path);

// Every published entry file under `root` (no temp or lock files), sorted
// by relative path. An absent root or kind directory is simply empty. A
// folder that fails the folder-trust rule for `use` (cache/folder_trust.h)
// is FailedPrecondition naming it.
absl::StatusOr<std::vector<EntryFileInfo>> ListEntryFiles(Env* env, const std::string& root,
                                                          RootUse use);

// Whether `bytes`, found at `relative_path`, is a sound entry for that
// place: it parses, its kind is the directory's and its key text hashes to
// the file name. DataLoss saying what is wrong otherwise.
absl::StatusOr<EntryView> CheckEntryFile(absl::string_view relative_path, std::string_view bytes);

// The entry's own XXH3-64 (its last 8 bytes) as 16 hex digits.
// REQUIRES: `bytes` passed ParseEntry.
std::string EntryChecksumHex(std::string_view bytes);

// The value of the first "<field>=..." line of a key text, or "".
std::string KeyTextField(std::string_view key_text, std::string_view field);

struct BadEntry {
  std::string path;
  std::string reason;
};

// What a walk over one root found (jitgemm-cache verify).
struct RootVerifyReport {
  uint64_t entries = 0;
  uint64_t valid = 0;
  uint64_t bytes = 0;
  std::vector<BadEntry> corrupt;
};
// Checks every entry under `root`; never modifies anything.
absl::StatusOr<RootVerifyReport> VerifyRoot(Env* env, const std::string& root, RootUse use);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_ENTRY_LISTING_H_
