// Bundles: a relocatable, self-checking copy of cache entries, made on a
// build machine and shipped to the machines that run the kernels.
//
// A bundle directory has exactly the layout of a cache root (cache/layout.h),
// so it can be used as is as a read-only root
// (JITGEMM_CACHE_READONLY_DIRS=<bundle>), plus files at its top:
//
//   <bundle>/v1/<kind>/<xx>/<32 hex>.bin   the entries, byte for byte
//   <bundle>/jitgemm-bundle.json           what it holds: format, creator,
//                                          time, selection, the arch / NVRTC /
//                                          ABI its keys were made for, and
//                                          every entry with size and checksum
//   <bundle>/jitgemm-bundle.sig            optional: an Ed25519 signature of
//                                          the manifest (cache/bundle_signature.h)
//   <bundle>/README.txt                    the same for people, and how to use it
//
// The archive form is a plain ustar tar of that directory (cache/ustar.h),
// members relative to it: `tar -xf bundle.tar -C dir` gives the directory.
//
// Every reader here checks every entry before using it: it must parse
// (ParseEntry: header, sizes, XXH3 checksum), sit under its own kind, have the
// file name its key text hashes to, and, when the bundle's manifest is there,
// be listed in it with the same size and checksum. An entry that fails is
// reported and skipped, never exported, imported or called valid. Before any
// of that, the bundle's folders must pass the folder-trust rule
// (cache/folder_trust.h) and no archive member may be writable by every user:
// checksums catch damage, not a forger, so only folders nobody else can write
// to (or, with trusted keys, a signed manifest) make the entries trustworthy.
//
// Thread safety: functions of independent calls may run concurrently; one
// bundle must not be written by two calls at once.
//
// Example:
//   ExportRequest req;
//   req.roots = {cache->root()};
//   req.out = "/tmp/bundle.tar";
//   absl::StatusOr<ExportReport> r = ExportBundle(req, Env::Default());
//   absl::StatusOr<ImportReport> i = ImportBundle("/tmp/bundle.tar", *other_cache);
#ifndef JITGEMM_CACHE_BUNDLE_H_
#define JITGEMM_CACHE_BUNDLE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cache/bundle_io.h"
#include "cache/bundle_manifest.h"
#include "cache/bundle_signature.h"
#include "cache/disk_cache.h"
#include "cache/entry.h"
#include "cache/entry_listing.h"
#include "cache/env.h"
#include "cache/key.h"

namespace jitgemm::cache {

// ------------------------------------------------------------ export

struct ExportRequest {
  // Where entries come from: cache roots in search order (the first sound
  // copy of an entry wins), or, if `from` is set, a bundle (directory or
  // .tar), whose entries are checked as VerifyBundle does.
  std::vector<std::string> roots;
  std::string from;

  // Which entries. `all`: every sound entry. Otherwise exactly `keys` (each
  // one not found is reported in `missing`) plus the tuning records whose
  // key text `tuning_filter` accepts (none if it is empty).
  bool all = true;
  std::vector<std::pair<EntryKind, CacheKey>> keys;
  std::function<bool(std::string_view key_text)> tuning_filter;

  // A directory (must not exist, or be empty), or a path ending in ".tar".
  std::string out;

  // Copied into the manifest; `created_at` also stamps archive members
  // (pass SOURCE_DATE_EPOCH for a reproducible archive).
  std::string created_by;
  std::string library_version;
  std::string selection;
  std::vector<std::string> manifests;
  absl::Time created_at = absl::Now();
  std::vector<std::string> key_fields = DefaultBundleKeyFields();
  // An Ed25519 private key in PEM: the manifest is signed with it
  // (cache/bundle_signature.h). Empty: an unsigned bundle.
  std::string sign_key_pem;
};

struct ExportReport {
  std::string out;
  bool archive = false;
  BundleManifest manifest;           // what was written
  std::vector<std::string> missing;  // hex of requested keys not found
  std::vector<BadEntry> corrupt;     // copies skipped (a sound copy elsewhere may have been used)
};

// Writes the bundle. A directory is built beside `out` and renamed into
// place (or, if `out` is an existing empty directory, written into it with the
// manifest last); an archive is written to a temp file and renamed. Errors
// only for what stops the export (unwritable output, unreadable source);
// missing and corrupt entries are reported.
absl::StatusOr<ExportReport> ExportBundle(const ExportRequest& request, Env* env);

// ------------------------------------------------------------ verify, import

struct BundleVerifyReport {
  bool archive = false;
  std::optional<BundleManifest> manifest;  // absent or unparsable: see manifest_error
  std::string manifest_error;
  uint64_t entries = 0;  // entry files present
  uint64_t valid = 0;
  uint64_t bytes = 0;                 // of the valid ones
  std::vector<BadEntry> corrupt;      // bad bytes, or differing from the manifest
  std::vector<std::string> missing;   // listed in the manifest, not present
  std::vector<std::string> unlisted;  // present, not in the manifest
  std::string signature;              // "unsigned", "signed by ed25519 <hex>[ (trusted here)]"
  std::string signature_error;        // with trusted keys: why the signature is refused
  std::vector<std::string> ignored;   // other members of an archive

  // A manifest, and every listed entry present and sound, nothing unlisted,
  // and (with trusted keys) a signature by one of them.
  bool ok() const {
    return manifest.has_value() && corrupt.empty() && missing.empty() && unlisted.empty() &&
           signature_error.empty();
  }
};

// Checks a bundle directory or archive. Errors only when it cannot be read
// at all (absent, or an archive rejected by TarReader).
// With `keys`, the bundle must also carry a signature of its manifest by one
// of them (signature_error otherwise).
absl::StatusOr<BundleVerifyReport> VerifyBundle(const std::string& from, Env* env,
                                                const TrustedKeys* keys = nullptr);

struct ImportReport {
  BundleVerifyReport verify;  // what the bundle held (valid = importable)
  uint64_t imported = 0;      // newly published into the writable root
  uint64_t imported_bytes = 0;
  uint64_t already_present = 0;  // a sound copy was already there
  uint64_t store_failures = 0;
};

// Publishes every entry VerifyBundle calls sound into `cache`'s writable
// root, through DiskCache::Store (temp file, fsync, rename); everything else
// is skipped and reported. FailedPrecondition unless `cache` is readwrite;
// DataLoss, importing nothing, if the manifest is there but damaged; with
// `cache.trusted_keys()`, PermissionDenied, importing nothing, unless one of
// them signed the manifest.
absl::StatusOr<ImportReport> ImportBundle(const std::string& from, DiskCache& cache,
                                          Env* env = Env::Default());

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_BUNDLE_H_
