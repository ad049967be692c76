// RELIABILITY 2, 3 and 4 at the format level: every defect of an entry's
// bytes is DataLoss, found from the bytes alone.
#include "cache/entry.h"

#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"
#include "xxhash.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::IsOk;
using ::jitgemm::cache::testing::StatusIs;
using ::testing::HasSubstr;

const CacheKey kKey = MakeCacheKey("arch=sm_90a\nconfig=64x64x16\n");
const CacheKey kOtherKey = MakeCacheKey("arch=sm_80\nconfig=64x64x16\n");

void PutU64At(std::string* bytes, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) (*bytes)[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void PutU32At(std::string* bytes, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*bytes)[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
// Rewrites the trailing checksum so only the deliberate defect remains.
void Reseal(std::string* bytes) {
  size_t body = bytes->size() - kEntryTrailerBytes;
  PutU64At(bytes, body, XXH3_64bits(bytes->data(), body));
}

TEST(EntryTest, RoundTrips) {
  std::string payload = testing::PayloadFor("cubin", 1000);
  std::string bytes = EncodeEntry(kKey, EntryKind::kCubin, payload);
  EXPECT_EQ(bytes.size(), kEntryHeaderBytes + kKey.text.size() + payload.size() + 8);
  absl::StatusOr<std::string> back = DecodeEntry(bytes, kKey);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(*back, payload);
  EXPECT_THAT(DecodeEntry(bytes, kKey, EntryKind::kCubin), IsOk());
}

TEST(EntryTest, EmptyPayloadRoundTrips) {
  absl::StatusOr<std::string> back = DecodeEntry(EncodeEntry(kKey, EntryKind::kCubin, ""), kKey);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(*back, "");
}

TEST(EntryTest, ParseExposesKeyTextForExplainingMisses) {
  std::string bytes = EncodeEntry(kKey, EntryKind::kTuningRecord, "{}");
  absl::StatusOr<EntryView> view = ParseEntry(bytes);
  ASSERT_THAT(view, IsOk());
  EXPECT_EQ(view->key_text, kKey.text);
  EXPECT_EQ(view->payload, "{}");
  EXPECT_EQ(view->kind, EntryKind::kTuningRecord);
  EXPECT_EQ(view->version, kEntryFormatVersion);
}

TEST(EntryTest, ThreeBytesOverwrittenInPayloadAreDetected) {
  std::string bytes = EncodeEntry(kKey, EntryKind::kCubin, testing::PayloadFor("p", 4096));
  size_t at = kEntryHeaderBytes + kKey.text.size() + 2000;
  for (size_t i = 0; i < 3; ++i) bytes[at + i] = static_cast<char>(~bytes[at + i]);
  EXPECT_THAT(DecodeEntry(bytes, kKey),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("checksum")));
}

TEST(EntryTest, ThreeBytesOverwrittenInHeaderAreDetected) {
  // In the key text, in the reserved word, and in the kind: each is caught.
  for (size_t at : {size_t{kEntryHeaderBytes + 3}, size_t{20}, size_t{12}}) {
    std::string bytes = EncodeEntry(kKey, EntryKind::kCubin, testing::PayloadFor("p", 512));
    std::memcpy(&bytes[at], "\x7f\x7f\x7f", 3);
    EXPECT_THAT(DecodeEntry(bytes, kKey), StatusIs(absl::StatusCode::kDataLoss, ::testing::_))
        << "offset " << at;
  }
}

TEST(EntryTest, EverySingleByteFlipIsDetected) {
  const std::string good = EncodeEntry(kKey, EntryKind::kCubin, testing::PayloadFor("p", 200));
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    EXPECT_THAT(DecodeEntry(bad, kKey), StatusIs(absl::StatusCode::kDataLoss, ::testing::_))
        << "byte " << i;
  }
}

TEST(EntryTest, EveryTruncationIsDetected) {
  const std::string good = EncodeEntry(kKey, EntryKind::kCubin, testing::PayloadFor("p", 300));
  for (size_t len = 0; len < good.size(); ++len) {
    EXPECT_THAT(DecodeEntry(good.substr(0, len), kKey),
                StatusIs(absl::StatusCode::kDataLoss, ::testing::_))
        << "length " << len;
  }
  EXPECT_THAT(DecodeEntry(good.substr(0, good.size() / 2), kKey),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("claimed")));
}

TEST(EntryTest, ZeroLengthIsRejected) {
  EXPECT_THAT(DecodeEntry("", kKey), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("empty")));
}

TEST(EntryTest, BadMagicIsRejected) {
  std::string bytes = EncodeEntry(kKey, EntryKind::kCubin, "payload");
  bytes[0] = 'X';
  Reseal(&bytes);
  EXPECT_THAT(DecodeEntry(bytes, kKey), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("magic")));
}

TEST(EntryTest, FutureFormatVersionIsRejected) {
  std::string bytes = EncodeEntry(kKey, EntryKind::kCubin, "payload");
  PutU32At(&bytes, 8, kEntryFormatVersion + 1);
  Reseal(&bytes);
  EXPECT_THAT(DecodeEntry(bytes, kKey),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("format version 2 is newer")));
  PutU32At(&bytes, 8, 0);
  Reseal(&bytes);
  EXPECT_THAT(DecodeEntry(bytes, kKey),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("unknown format version 0")));
}

TEST(EntryTest, ClaimedPayloadOf2To40BytesIsRejectedFromTheHeader) {
  std::string bytes = EncodeEntry(kKey, EntryKind::kCubin, "payload");
  PutU64At(&bytes, 24, uint64_t{1} << 40);
  Reseal(&bytes);
  EXPECT_THAT(DecodeEntry(bytes, kKey),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("1099511627776 bytes claimed")));
  // Sizes chosen to overflow a naive sum are rejected the same way.
  PutU64At(&bytes, 24, ~uint64_t{0} - 10);
  Reseal(&bytes);
  EXPECT_THAT(DecodeEntry(bytes, kKey),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("claimed")));
}

TEST(EntryTest, ClaimedHugeKeyTextIsRejected) {
  std::string bytes = EncodeEntry(kKey, EntryKind::kCubin, "payload");
  PutU32At(&bytes, 16, 0xffffffffu);
  Reseal(&bytes);
  EXPECT_THAT(DecodeEntry(bytes, kKey),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("key text of 4294967295")));
}

TEST(EntryTest, TrailingBytesAreRejected) {
  std::string bytes = EncodeEntry(kKey, EntryKind::kCubin, "payload");
  bytes.insert(bytes.size() - kEntryTrailerBytes, "xx");
  Reseal(&bytes);
  EXPECT_THAT(DecodeEntry(bytes, kKey),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("unexplained trailing")));
}

TEST(EntryTest, UnknownKindIsRejected) {
  std::string bytes = EncodeEntry(kKey, EntryKind::kCubin, "payload");
  PutU32At(&bytes, 12, 7);
  Reseal(&bytes);
  EXPECT_THAT(DecodeEntry(bytes, kKey), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("kind 7")));
}

TEST(EntryTest, AnotherKeysEntryIsRejected) {
  // A swapped or renamed file: sound in itself, but for a different key.
  std::string bytes = EncodeEntry(kOtherKey, EntryKind::kCubin, "payload");
  EXPECT_THAT(ParseEntry(bytes), IsOk());
  EXPECT_THAT(DecodeEntry(bytes, kKey),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("another key")));
}

TEST(EntryTest, SameHashDifferentTextIsRejected) {
  // Models a 128-bit collision: the hash halves agree, the text does not.
  CacheKey forged = kKey;
  forged.text += "x";
  std::string bytes = EncodeEntry(forged, EntryKind::kCubin, "payload");
  EXPECT_THAT(DecodeEntry(bytes, kKey),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("another key")));
}

TEST(EntryTest, WrongKindIsRejected) {
  std::string bytes = EncodeEntry(kKey, EntryKind::kTuningRecord, "{}");
  EXPECT_THAT(DecodeEntry(bytes, kKey, EntryKind::kCubin),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("is a tuning, wanted a cubin")));
}

}  // namespace
}  // namespace jitgemm::cache
