#include "cache/bundle_signature.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cache/env.h"
#include "cache/log.h"

namespace jitgemm::cache {
namespace {

constexpr char kSignatureFormat[] = "jitgemm-bundle-signature-1";
constexpr size_t kKeyBytes = 32;
constexpr size_t kSignatureBytes = 64;
constexpr uint64_t kMaxKeyFileBytes = 64 << 10;

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;
using Bio = std::unique_ptr<BIO, BioFree>;

Bio MemBio(std::string_view text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

std::string RawPublicKey(EVP_PKEY* key) {
  std::string raw(kKeyBytes, '\0');
  size_t len = raw.size();
  if (EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(raw.data()), &len) != 1 ||
      len != kKeyBytes) {
    return "";
  }
  return raw;
}

std::string PemOf(EVP_PKEY* key, bool private_key) {
  Bio bio(BIO_new(BIO_s_mem()));
  const int ok =
      private_key ? PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)
                  : PEM_write_bio_PUBKEY(bio.get(), key);
  if (ok != 1) return "";
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

}  // namespace

absl::StatusOr<std::string> SignManifest(std::string_view manifest,
                                         std::string_view private_key_pem) {
  Bio bio = MemBio(private_key_pem);
  Pkey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr || EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519) {
    return absl::InvalidArgumentError("the signing key is not an Ed25519 private key in PEM");
  }
  MdCtx ctx(EVP_MD_CTX_new());
  std::string sig(kSignatureBytes, '\0');
  size_t sig_len = sig.size();
  // Ed25519 signs the message itself: no digest is named.
  if (ctx == nullptr || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &sig_len,
                     reinterpret_cast<const unsigned char*>(manifest.data()),
                     manifest.size()) != 1 ||
      sig_len != kSignatureBytes) {
    return absl::InternalError("Ed25519 signing failed");
  }
  return absl::StrCat(kSignatureFormat, " ed25519 ",
                      absl::BytesToHexString(RawPublicKey(key.get())), " ",
                      absl::BytesToHexString(sig), "\n");
}

absl::StatusOr<SigningKeyPair> GenerateSigningKey() {
  Pkey key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  if (key == nullptr) return absl::InternalError("Ed25519 key generation failed");
  SigningKeyPair pair{PemOf(key.get(), true), PemOf(key.get(), false)};
  if (pair.private_pem.empty() || pair.public_pem.empty()) {
    return absl::InternalError("writing the Ed25519 key as PEM failed");
  }
  return pair;
}

absl::StatusOr<TrustedKeys> TrustedKeys::FromPem(const std::vector<std::string>& pems) {
  TrustedKeys keys;
  for (size_t i = 0; i < pems.size(); ++i) {
    Bio bio = MemBio(pems[i]);
    Pkey key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
    if (key == nullptr || EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519) {
      return absl::InvalidArgumentError(
          absl::StrCat("key ", i + 1, " is not an Ed25519 public key in PEM"));
    }
    keys.raw_keys_.push_back(RawPublicKey(key.get()));
  }
  return keys;
}

absl::StatusOr<TrustedKeys> TrustedKeys::Load(const std::vector<std::string>& pem_files) {
  std::vector<std::string> pems;
  for (const std::string& file : pem_files) {
    absl::StatusOr<std::string> text = Env::Default()->ReadFile(file, kMaxKeyFileBytes);
    if (!text.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("trusted key ", QuotedForHumans(file), ": ", text.status().message()));
    }
    absl::StatusOr<TrustedKeys> one = FromPem({*text});
    if (!one.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("trusted key ", QuotedForHumans(file),
                                                     " is not an Ed25519 public key in PEM"));
    }
    pems.push_back(std::move(text).value());
  }
  return FromPem(pems);
}

std::vector<std::string> TrustedKeys::Names() const {
  std::vector<std::string> out;
  for (const std::string& raw : raw_keys_) {
    out.push_back(absl::StrCat("ed25519 ", absl::BytesToHexString(raw)));
  }
  return out;
}

absl::Status TrustedKeys::Verify(std::string_view manifest, std::string_view signature_file) const {
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripTrailingAsciiWhitespace(
                         absl::string_view(signature_file.data(), signature_file.size())),
                     ' ');
  auto is_hex = [](absl::string_view s) {
    return s.find_first_not_of("0123456789abcdef") == absl::string_view::npos;
  };
  if (fields.size() != 4 || fields[0] != kSignatureFormat || fields[1] != "ed25519" ||
      fields[2].size() != 2 * kKeyBytes || fields[3].size() != 2 * kSignatureBytes ||
      !is_hex(fields[2]) || !is_hex(fields[3])) {
    return absl::PermissionDeniedError("the signature file is malformed");
  }
  const std::string signer = absl::HexStringToBytes(fields[2]);
  const std::string sig = absl::HexStringToBytes(fields[3]);
  for (const std::string& raw : raw_keys_) {
    if (raw != signer) continue;
    Pkey key(EVP_PKEY_new_raw_public_key(
        EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(raw.data()), raw.size()));
    MdCtx ctx(EVP_MD_CTX_new());
    if (key == nullptr || ctx == nullptr ||
        EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1) {
      return absl::InternalError("Ed25519 verification could not start");
    }
    if (EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                         reinterpret_cast<const unsigned char*>(manifest.data()),
                         manifest.size()) == 1) {
      return absl::OkStatus();
    }
    return absl::PermissionDeniedError(
        absl::StrCat("the signature by trusted key ed25519 ", fields[2],
                     " does not match the manifest (changed since it was signed)"));
  }
  return absl::PermissionDeniedError(absl::StrCat("signed by ed25519 ", fields[2],
                                                  ", which is not among the ", raw_keys_.size(),
                                                  " trusted keys (JITGEMM_CACHE_TRUSTED_KEYS)"));
}

}  // namespace jitgemm::cache
