// Bundle signatures (cache/bundle_signature.h): Ed25519 over the manifest's
// exact bytes; a changed manifest, another key, or a malformed file is
// refused, and keys made by the openssl command line work as well.
#include "cache/bundle_signature.h"

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {
namespace {

using ::testing::HasSubstr;
using testing::IsOk;
using testing::ReadBytes;
using testing::ScratchDir;
using testing::StatusIs;
using testing::WriteBytes;

constexpr char kManifest[] = "{\"format\":\"jitgemm-bundle-1\",\"files\":[]}\n";

TEST(BundleSignatureTest, SignedManifestVerifiesWithItsKeyOnly) {
  absl::StatusOr<SigningKeyPair> mine = GenerateSigningKey();
  absl::StatusOr<SigningKeyPair> theirs = GenerateSigningKey();
  ASSERT_THAT(mine.status(), IsOk());
  ASSERT_THAT(theirs.status(), IsOk());
  absl::StatusOr<std::string> sig = SignManifest(kManifest, mine->private_pem);
  ASSERT_THAT(sig.status(), IsOk());
  EXPECT_THAT(*sig, HasSubstr("jitgemm-bundle-signature-1 ed25519 "));

  absl::StatusOr<TrustedKeys> trusted =
      TrustedKeys::FromPem({theirs->public_pem, mine->public_pem});
  ASSERT_THAT(trusted.status(), IsOk());
  EXPECT_EQ(trusted->size(), 2u);
  EXPECT_THAT(trusted->Verify(kManifest, *sig), IsOk());

  // One changed byte of the manifest.
  std::string tampered = kManifest;
  tampered[3] ^= 1;
  EXPECT_THAT(trusted->Verify(tampered, *sig),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("does not match")));
  // Signed by a key nobody trusts.
  absl::StatusOr<TrustedKeys> only_theirs = TrustedKeys::FromPem({theirs->public_pem});
  EXPECT_THAT(only_theirs->Verify(kManifest, *sig),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("not among the 1 trusted")));
  // A signature whose key field names a trusted key but was made by another.
  absl::StatusOr<std::string> forged = SignManifest(kManifest, theirs->private_pem);
  const std::string my_hex = sig->substr(sig->find("ed25519 ") + 8, 64);
  const std::string their_hex = forged->substr(forged->find("ed25519 ") + 8, 64);
  EXPECT_THAT(trusted->Verify(kManifest, absl::StrReplaceAll(*forged, {{their_hex, my_hex}})),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("does not match")));
  // No keys at all trusts nothing.
  EXPECT_THAT(TrustedKeys().Verify(kManifest, *sig),
              StatusIs(absl::StatusCode::kPermissionDenied, ::testing::_));
}

TEST(BundleSignatureTest, MalformedSignaturesAndKeysAreRefused) {
  absl::StatusOr<SigningKeyPair> mine = GenerateSigningKey();
  absl::StatusOr<TrustedKeys> trusted = TrustedKeys::FromPem({mine->public_pem});
  for (const std::string& bad :
       {std::string(""), std::string("jitgemm-bundle-signature-1 ed25519 00 00"),
        std::string("jitgemm-bundle-signature-2 ed25519 ") + std::string(64, '0') + " " +
            std::string(128, '0'),
        std::string("jitgemm-bundle-signature-1 rsa ") + std::string(64, '0') + " " +
            std::string(128, '0')}) {
    EXPECT_THAT(trusted->Verify(kManifest, bad),
                StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("malformed")))
        << bad;
  }
  EXPECT_THAT(SignManifest(kManifest, mine->public_pem).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Ed25519 private key")));
  EXPECT_THAT(SignManifest(kManifest, "not a key").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(TrustedKeys::FromPem({mine->private_pem + "x"}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  ScratchDir dir;
  EXPECT_THAT(TrustedKeys::Load({dir.Sub("absent.pub")}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("absent.pub")));
}

TEST(BundleSignatureTest, KeysFromTheOpensslCommandLineWork) {
  ScratchDir dir;
  const std::string key = dir.Sub("k.pem"), pub = dir.Sub("k.pub");
  if (std::system(absl::StrCat("openssl genpkey -algorithm ed25519 -out ", key,
                               " >/dev/null 2>&1 && openssl pkey -in ", key, " -pubout -out ", pub,
                               " >/dev/null 2>&1")
                      .c_str()) != 0) {
    GTEST_SKIP() << "no openssl command line here";
  }
  absl::StatusOr<std::string> sig = SignManifest(kManifest, ReadBytes(key));
  ASSERT_THAT(sig.status(), IsOk());
  absl::StatusOr<TrustedKeys> trusted = TrustedKeys::Load({pub});
  ASSERT_THAT(trusted.status(), IsOk());
  EXPECT_THAT(trusted->Verify(kManifest, *sig), IsOk());
  // And openssl itself accepts our signature over the same bytes.
  WriteBytes(dir.Sub("m"), kManifest);
  std::string raw;
  const std::string hex = sig->substr(sig->rfind(' ') + 1, 128);
  for (size_t i = 0; i < hex.size(); i += 2) {
    raw.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  WriteBytes(dir.Sub("m.sig"), raw);
  EXPECT_EQ(
      std::system(absl::StrCat("openssl pkeyutl -verify -pubin -inkey ", pub, " -rawin -in ",
                               dir.Sub("m"), " -sigfile ", dir.Sub("m.sig"), " >/dev/null 2>&1")
                      .c_str()),
      0);
}

}  // namespace
}  // namespace jitgemm::cache
