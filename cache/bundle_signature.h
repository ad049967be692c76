// Bundle signatures: an Ed25519 signature (OpenSSL libcrypto) over the exact
// bytes of a bundle's manifest, which lists every entry's size and checksum,
// so one signature vouches for every entry of the bundle.
//
// The signature file (jitgemm-bundle.sig, beside the manifest) is one line:
//   jitgemm-bundle-signature-1 ed25519 <public key, 64 hex> <signature, 128 hex>
// The public key is there so a refusal can say which key signed; trust comes
// only from TrustedKeys, the public keys a process was given
// (JITGEMM_CACHE_TRUSTED_KEYS: ':'-separated PEM files).
//
// Thread safety: TrustedKeys is immutable after Load; the functions are pure.
//
// Example:
//   absl::StatusOr<std::string> sig = SignManifest(manifest_json, private_key_pem);
//   absl::StatusOr<TrustedKeys> keys = TrustedKeys::Load({"/etc/jitgemm/release.pub"});
//   absl::Status ok = keys->Verify(manifest_json, *sig);
#ifndef JITGEMM_CACHE_BUNDLE_SIGNATURE_H_
#define JITGEMM_CACHE_BUNDLE_SIGNATURE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace jitgemm::cache {

// The signature file's text for `manifest`, signed with the Ed25519 private
// key in `private_key_pem` (PKCS#8 PEM, as `openssl genpkey -algorithm
// ed25519` writes). InvalidArgument for anything but an Ed25519 private key.
absl::StatusOr<std::string> SignManifest(std::string_view manifest,
                                         std::string_view private_key_pem);

struct SigningKeyPair {
  std::string private_pem;  // PKCS#8
  std::string public_pem;   // SubjectPublicKeyInfo
};
// A fresh Ed25519 key pair (jitgemm-cache keygen).
absl::StatusOr<SigningKeyPair> GenerateSigningKey();

class TrustedKeys {
 public:
  // Reads each PEM public key file (at most 64 KiB, a regular file).
  // InvalidArgument naming the file for one that is not an Ed25519 public key.
  static absl::StatusOr<TrustedKeys> Load(const std::vector<std::string>& pem_files);
  // From PEM text, for tests and callers holding keys in memory.
  static absl::StatusOr<TrustedKeys> FromPem(const std::vector<std::string>& pems);

  // OK if `signature_file` is a well-formed signature of exactly `manifest`
  // by one of these keys. PermissionDenied otherwise, saying why: absent,
  // malformed, by a key not trusted here, or not matching (a changed
  // manifest).
  absl::Status Verify(std::string_view manifest, std::string_view signature_file) const;

  size_t size() const { return raw_keys_.size(); }
  // "ed25519 <64 hex>" for each key, for messages.
  std::vector<std::string> Names() const;

 private:
  std::vector<std::string> raw_keys_;  // 32 bytes each
};

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_BUNDLE_SIGNATURE_H_
