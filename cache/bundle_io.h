// Bundle I/O: where bundle entries are read from (a cache root, a bundle
// directory, a ustar archive) and where an export writes them (a directory
// built beside its final name, or an archive), for cache/bundle.cc.
//
// A Source lists its entries up front and reads each on demand; Check ties
// an entry's bytes to the bundle's manifest when there is one. A Sink takes
// entries, then the README and the manifest last, whose presence marks a
// whole bundle.
//
// Thread safety: one object per thread.
#ifndef JITGEMM_CACHE_BUNDLE_IO_H_
#define JITGEMM_CACHE_BUNDLE_IO_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cache/bundle_manifest.h"
#include "cache/entry_listing.h"
#include "cache/env.h"

namespace jitgemm::cache {

class Source {
 public:
  virtual ~Source() = default;
  const std::vector<EntryFileInfo>& entries() const { return entries_; }
  virtual absl::StatusOr<std::string> Read(const EntryFileInfo& entry) const = 0;

  // CheckEntryFile, then (for a bundle with a manifest) the listing: NotFound
  // if the entry is not listed, DataLoss if it differs from its listing.
  absl::StatusOr<EntryView> Check(const EntryFileInfo& entry, std::string_view bytes) const;

  bool archive() const { return archive_; }
  const std::optional<BundleManifest>& manifest() const { return manifest_; }
  const std::string& manifest_error() const { return manifest_error_; }
  // No manifest at all (a plain cache root), as opposed to a damaged one.
  bool manifest_absent() const { return manifest_absent_; }
  // The manifest's exact bytes, which a signature covers.
  const std::string& manifest_text() const { return manifest_text_; }
  // The text of jitgemm-bundle.sig, if the bundle has one.
  const std::optional<std::string>& signature() const { return signature_; }
  const std::vector<std::string>& ignored() const { return ignored_; }

 protected:
  void SetManifest(absl::StatusOr<std::string> text);

  std::vector<EntryFileInfo> entries_;
  bool archive_ = false;
  std::optional<BundleManifest> manifest_;
  std::string manifest_error_;
  bool manifest_absent_ = false;
  std::string manifest_text_;
  std::optional<std::string> signature_;
  std::vector<std::string> ignored_;
};

// A cache root (`is_bundle` false: no manifest looked for) or bundle directory.
absl::StatusOr<std::unique_ptr<Source>> OpenDirSource(Env* env, const std::string& dir,
                                                      bool is_bundle);
// A bundle directory, or an archive if `from` ends in ".tar".
absl::StatusOr<std::unique_ptr<Source>> OpenBundle(Env* env, const std::string& from);

class Sink {
 public:
  virtual ~Sink() = default;
  virtual absl::Status Add(const std::string& relative_path, std::string_view bytes) = 0;
  // Writes README.txt, the signature if not empty, then the manifest (last:
  // its presence marks a whole bundle).
  virtual absl::Status Finish(const std::string& manifest, const std::string& readme,
                              const std::string& signature) = 0;
};

// A directory (must not exist, or be empty) or, for a path ending in ".tar",
// an archive whose members carry `mtime`.
absl::StatusOr<std::unique_ptr<Sink>> CreateSink(Env* env, const std::string& out,
                                                 absl::Time mtime);

// Whether `path` names the archive form (ends in ".tar").
bool IsArchivePath(absl::string_view path);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_BUNDLE_IO_H_
