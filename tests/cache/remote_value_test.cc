// The remote value envelope (cache/remote_value.h): the disk entry inside,
// an HMAC-SHA256 around it, and every way a stored value can be wrong.
#include "cache/remote_value.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::StatusIs;
using ::testing::HasSubstr;

const CacheKey kKey = MakeCacheKey("arch=sm_90a\nkernel=a");
const CacheKey kOtherKey = MakeCacheKey("arch=sm_90a\nkernel=b");
constexpr char kSecret[] = "0123456789abcdef-fleet-secret";
constexpr char kPayload[] = "cubin bytes";

TEST(RemoteValueTest, SignedValueRoundTripsWithItsSecret) {
  const std::string v = EncodeRemoteValue(kKey, EntryKind::kCubin, kPayload, kSecret);
  ASSERT_GT(v.size(), kRemoteHeaderBytes);
  EXPECT_EQ(DecodeRemoteValue(v, kKey, EntryKind::kCubin, kSecret).value(), kPayload);
  // A reader without a secret accepts it too (it cannot check the MAC).
  EXPECT_EQ(DecodeRemoteValue(v, kKey, EntryKind::kCubin, "").value(), kPayload);
}

TEST(RemoteValueTest, TheEnvelopeHoldsTheDiskEntryUnchanged) {
  const std::string v = EncodeRemoteValue(kKey, EntryKind::kCubin, kPayload, "");
  bool is_signed = true;
  absl::StatusOr<std::string_view> entry = RemoteValueEntry(v, &is_signed);
  ASSERT_TRUE(entry.ok());
  EXPECT_FALSE(is_signed);
  EXPECT_EQ(*entry, EncodeEntry(kKey, EntryKind::kCubin, kPayload));
}

TEST(RemoteValueTest, UnsignedValueIsRefusedWhenASecretIsSet) {
  const std::string v = EncodeRemoteValue(kKey, EntryKind::kCubin, kPayload, "");
  EXPECT_EQ(DecodeRemoteValue(v, kKey, EntryKind::kCubin, "").value(), kPayload);
  EXPECT_THAT(DecodeRemoteValue(v, kKey, EntryKind::kCubin, kSecret),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("unsigned")));
}

TEST(RemoteValueTest, WrongSecretIsRefused) {
  const std::string v =
      EncodeRemoteValue(kKey, EntryKind::kCubin, kPayload, "another-secret-of-the-attacker");
  EXPECT_THAT(DecodeRemoteValue(v, kKey, EntryKind::kCubin, kSecret),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("HMAC")));
}

TEST(RemoteValueTest, AnyFlippedByteIsRefused) {
  const std::string v = EncodeRemoteValue(kKey, EntryKind::kCubin, kPayload, kSecret);
  for (size_t i = 0; i < v.size(); ++i) {
    std::string bad = v;
    bad[i] ^= 0x20;
    EXPECT_FALSE(DecodeRemoteValue(bad, kKey, EntryKind::kCubin, kSecret).ok()) << "byte " << i;
  }
}

TEST(RemoteValueTest, ClearingTheSignedFlagDoesNotDowngrade) {
  std::string v = EncodeRemoteValue(kKey, EntryKind::kCubin, kPayload, kSecret);
  v[12] = 0;  // flags: unsigned, the MAC still there
  EXPECT_THAT(DecodeRemoteValue(v, kKey, EntryKind::kCubin, kSecret),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("unsigned value with a MAC")));
  v.replace(16, 32, std::string(32, '\0'));  // and the MAC zeroed
  EXPECT_THAT(DecodeRemoteValue(v, kKey, EntryKind::kCubin, kSecret),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("unsigned")));
  EXPECT_EQ(DecodeRemoteValue(v, kKey, EntryKind::kCubin, "").value(), kPayload);
}

TEST(RemoteValueTest, EveryTruncationIsRefused) {
  const std::string v = EncodeRemoteValue(kKey, EntryKind::kCubin, kPayload, kSecret);
  for (size_t n = 0; n < v.size(); ++n) {
    EXPECT_FALSE(DecodeRemoteValue(v.substr(0, n), kKey, EntryKind::kCubin, "").ok()) << n;
  }
}

TEST(RemoteValueTest, AnotherKeysOrKindsValueIsRefused) {
  const std::string v = EncodeRemoteValue(kOtherKey, EntryKind::kCubin, kPayload, kSecret);
  EXPECT_THAT(DecodeRemoteValue(v, kKey, EntryKind::kCubin, kSecret),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("another key")));
  const std::string t = EncodeRemoteValue(kKey, EntryKind::kTuningRecord, "{}", kSecret);
  EXPECT_THAT(DecodeRemoteValue(t, kKey, EntryKind::kCubin, kSecret),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("tuning")));
}

TEST(RemoteValueTest, UnknownVersionAndFlagsAreRefused) {
  std::string v = EncodeRemoteValue(kKey, EntryKind::kCubin, kPayload, "");
  std::string version = v;
  version[8] = 2;
  EXPECT_THAT(DecodeRemoteValue(version, kKey, EntryKind::kCubin, ""),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("version")));
  std::string flags = v;
  flags[13] = 1;
  EXPECT_THAT(DecodeRemoteValue(flags, kKey, EntryKind::kCubin, ""),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("flags")));
  EXPECT_THAT(DecodeRemoteValue("JGMCACHE" + v.substr(8), kKey, EntryKind::kCubin, ""),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("magic")));
}

TEST(RemoteValueTest, KeysNameKindAndHash) {
  EXPECT_EQ(RemoteEntryKey(kKey, EntryKind::kCubin), "jitgemm:v1:cubin:" + kKey.Hex());
  EXPECT_EQ(RemoteLockKey(kKey, EntryKind::kTuningRecord), "jitgemm:v1:lock:tuning:" + kKey.Hex());
}

}  // namespace
}  // namespace jitgemm::cache
