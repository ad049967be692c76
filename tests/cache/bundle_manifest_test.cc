// The bundle manifest (cache/bundle_manifest.h): a round trip, the
// rejections, and (issue 19, item 3) bounded reading: size, depth, repeated
// keys and unknown fields are refused before anything large is built.
#include "cache/bundle_manifest.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {
namespace {

using ::testing::HasSubstr;
using testing::IsOk;
using testing::StatusIs;

TEST(BundleManifestTest, JsonRoundTripAndRejections) {
  BundleManifest m;
  m.created_by = "t";
  m.created_at = "2024-01-01T00:00:00Z";
  m.selection = "s";
  m.manifests = {"a.json"};
  m.key_fields["arch"] = {"sm_90a"};
  m.kinds["cubin"] = {1, 10};
  m.entries = 1;
  m.bytes = 10;
  m.files["v1/cubin/ab/ab000000000000000000000000000000.bin"] = {10, "0123456789abcdef"};
  absl::StatusOr<BundleManifest> back = BundleManifest::FromJson(m.ToJson());
  ASSERT_THAT(back.status(), IsOk());
  EXPECT_EQ(back->ToJson(), m.ToJson());

  for (const char* bad :
       {"", "[]", "{\"format\":\"other\",\"files\":[]}", "{\"format\":\"jitgemm-bundle-1\"}",
        "{\"format\":\"jitgemm-bundle-1\",\"files\":[{\"path\":\"../x\","
        "\"bytes\":1,\"xxh3\":\"0\"}]}",
        "{\"format\":\"jitgemm-bundle-1\",\"files\":[{\"path\":1}]}",
        "{\"format\":\"jitgemm-bundle-1\",\"entries\":-1,\"files\":[]}"}) {
    EXPECT_THAT(BundleManifest::FromJson(bad).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_))
        << bad;
  }
}

TEST(BundleManifestTest, MemoryBombsAreRefusedBeforeParsing) {
  // 256 MiB of '[' once drove import to ~10 GB and an abort.
  EXPECT_THAT(BundleManifest::FromJson(std::string(16 << 20, '[')).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deeper than")));
  EXPECT_THAT(BundleManifest::FromJson(std::string(kMaxBundleManifestBytes + 1, ' ')).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("limit")));
}

TEST(BundleManifestTest, RepeatedKeysAndUnknownFieldsAreNamed) {
  const std::string files = R"("files":[])";
  EXPECT_THAT(BundleManifest::FromJson(
                  absl::StrCat(R"({"format":"jitgemm-bundle-1",)", files, ",", files, "}"))
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("duplicate key \"files\"")));
  EXPECT_THAT(BundleManifest::FromJson(
                  absl::StrCat(R"({"format":"jitgemm-bundle-1","signer":"me",)", files, "}"))
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown field 'signer'")));
  EXPECT_THAT(
      BundleManifest::FromJson(R"({"format":"jitgemm-bundle-1","files":[{"path":)"
                               R"("v1/cubin/ab/ab000000000000000000000000000000.bin",)"
                               R"("bytes":1,"xxh3":"0","mode":511}]})")
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("files[0]: unknown field 'mode'")));
}

}  // namespace
}  // namespace jitgemm::cache
