// DiskCache with trusted keys (JITGEMM_CACHE_TRUSTED_KEYS): a read-only root
// is used only if it is a bundle whose manifest a trusted key signed, and only
// the entries that manifest lists, byte for byte. The writable root is this
// user's own and needs no signature.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cache/disk_cache.h"
#include "cache/log.h"

namespace jitgemm::cache {

void DiskCache::LoadTrustedKeys() {
  if (settings_.trusted_keys.empty()) return;
  absl::StatusOr<TrustedKeys> keys = TrustedKeys::Load(settings_.trusted_keys);
  if (keys.ok()) {
    trusted_keys_ = std::move(keys).value();
    return;
  }
  trusted_keys_ = TrustedKeys();  // trusts nothing
  LogCacheWarning(absl::StrCat("JITGEMM_CACHE_TRUSTED_KEYS: ", keys.status().message(),
                               "; no read-only root or bundle will be trusted"));
}

absl::Status DiskCache::CheckSignedRoot(const std::string& root) {
  absl::StatusOr<BundleManifestFiles> files = ReadBundleManifestFiles(env_, root);
  if (!files.ok()) {
    return absl::PermissionDeniedError(
        absl::StrCat("JITGEMM_CACHE_TRUSTED_KEYS is set and it has no readable signed manifest (",
                     files.status().message(), ")"));
  }
  if (!files->signature.has_value()) {
    return absl::PermissionDeniedError(
        absl::StrCat("JITGEMM_CACHE_TRUSTED_KEYS is set and its manifest is not signed (no ",
                     kBundleSignatureFile, ")"));
  }
  absl::Status verified = trusted_keys_->Verify(files->manifest, *files->signature);
  if (!verified.ok()) return verified;
  absl::StatusOr<BundleManifest> manifest = BundleManifest::FromJson(files->manifest);
  if (!manifest.ok()) return manifest.status();
  signed_listings_[root] = std::move(manifest->files);
  return absl::OkStatus();
}

absl::StatusOr<std::string> DiskCache::CheckListed(const std::string& root,
                                                   const std::string& relative,
                                                   std::string_view bytes,
                                                   absl::StatusOr<std::string> payload) const {
  if (!trusted_keys_.has_value()) return payload;
  auto listing = signed_listings_.find(root);
  if (listing == signed_listings_.end()) {
    return absl::PermissionDeniedError("read-only root without a signed manifest");
  }
  auto it = listing->second.find(relative);
  if (it == listing->second.end()) {
    return absl::PermissionDeniedError(
        absl::StrCat("not listed in the signed ", kBundleManifestFile));
  }
  if (it->second.bytes != bytes.size() || it->second.checksum != EntryChecksumHex(bytes)) {
    return absl::PermissionDeniedError(
        absl::StrCat("differs from its listing in the signed ", kBundleManifestFile));
  }
  return payload;
}

}  // namespace jitgemm::cache
