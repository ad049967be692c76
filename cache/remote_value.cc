#include "cache/remote_value.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <array>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace jitgemm::cache {
namespace {

using Mac = std::array<unsigned char, 32>;

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

absl::Status Malformed(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("malformed remote cache value: ", what));
}

// HMAC-SHA256 over the first 16 bytes of the header and the entry. False
// only if libcrypto fails, which then signs and verifies nothing.
bool ComputeMac(std::string_view secret, std::string_view header16, std::string_view entry,
                Mac* mac) {
  std::unique_ptr<EVP_MAC, decltype(&EVP_MAC_free)> hmac(EVP_MAC_fetch(nullptr, "HMAC", nullptr),
                                                         EVP_MAC_free);
  if (hmac == nullptr) return false;
  std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx(EVP_MAC_CTX_new(hmac.get()),
                                                                EVP_MAC_CTX_free);
  if (ctx == nullptr) return false;
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_end()};
  size_t out = 0;
  return EVP_MAC_init(ctx.get(), reinterpret_cast<const unsigned char*>(secret.data()),
                      secret.size(), params) == 1 &&
         EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(header16.data()),
                        header16.size()) == 1 &&
         EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(entry.data()),
                        entry.size()) == 1 &&
         EVP_MAC_final(ctx.get(), mac->data(), &out, mac->size()) == 1 && out == mac->size();
}

}  // namespace

std::string EncodeRemoteValue(const CacheKey& key, EntryKind kind, std::string_view payload,
                              std::string_view secret) {
  const std::string entry = EncodeEntry(key, kind, payload);
  std::string out;
  out.reserve(kRemoteHeaderBytes + entry.size());
  out.append(kRemoteMagic, sizeof(kRemoteMagic));
  PutU32(&out, kRemoteFormatVersion);
  Mac mac{};
  const bool sign = !secret.empty();
  PutU32(&out, sign ? kRemoteSignedFlag : 0);
  if (sign && !ComputeMac(secret, out, entry, &mac)) {
    // Publish nothing rather than an unsigned value a secret-holding reader
    // would reject anyway.
    return "";
  }
  out.append(reinterpret_cast<const char*>(mac.data()), mac.size());
  out.append(entry);
  return out;
}

absl::StatusOr<std::string_view> RemoteValueEntry(std::string_view value, bool* is_signed) {
  if (value.size() < kRemoteHeaderBytes) {
    return Malformed(absl::StrCat("only ", value.size(), " bytes, shorter than a header"));
  }
  if (std::memcmp(value.data(), kRemoteMagic, sizeof(kRemoteMagic)) != 0) {
    return Malformed("bad magic");
  }
  const uint32_t version = GetU32(value.data() + 8);
  if (version != kRemoteFormatVersion) {
    return Malformed(absl::StrCat("unknown format version ", version));
  }
  const uint32_t flags = GetU32(value.data() + 12);
  if ((flags & ~kRemoteSignedFlag) != 0) return Malformed(absl::StrCat("unknown flags ", flags));
  *is_signed = (flags & kRemoteSignedFlag) != 0;
  if (!*is_signed && value.substr(16, 32).find_first_not_of('\0') != std::string_view::npos) {
    // One encoding per value: an unsigned value's MAC field is zero.
    return Malformed("unsigned value with a MAC");
  }
  return value.substr(kRemoteHeaderBytes);
}

absl::StatusOr<std::string> DecodeRemoteValue(std::string_view value, const CacheKey& expected,
                                              EntryKind expected_kind, std::string_view secret) {
  bool is_signed = false;
  absl::StatusOr<std::string_view> entry = RemoteValueEntry(value, &is_signed);
  if (!entry.ok()) return entry.status();
  if (!secret.empty()) {
    if (!is_signed) {
      return absl::PermissionDeniedError("remote cache value is unsigned and a secret is set");
    }
    Mac mac{};
    if (!ComputeMac(secret, value.substr(0, 16), *entry, &mac)) {
      return absl::InternalError("HMAC-SHA256 is unavailable in libcrypto");
    }
    if (CRYPTO_memcmp(mac.data(), value.data() + 16, mac.size()) != 0) {
      return absl::PermissionDeniedError(
          "remote cache value is not signed with this secret (HMAC mismatch)");
    }
  }
  return DecodeEntry(*entry, expected, expected_kind);
}

std::string RemoteEntryKey(const CacheKey& key, EntryKind kind) {
  return absl::StrCat("jitgemm:v1:", EntryKindName(kind), ":", key.Hex());
}

std::string RemoteLockKey(const CacheKey& key, EntryKind kind) {
  return absl::StrCat("jitgemm:v1:lock:", EntryKindName(kind), ":", key.Hex());
}

}  // namespace jitgemm::cache
