// Bounded JSON (issue 19, item 3): size, depth and repeated keys are refused
// before any DOM is built; unknown fields are errors naming them.
#include "cache/json_fields.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::IsOk;
using ::jitgemm::cache::testing::StatusIs;
using ::testing::HasSubstr;

constexpr JsonLimits kLimits = {1 << 20, 8};

TEST(JsonFieldsTest, AcceptsWhatFitsTheLimits) {
  absl::StatusOr<Json> j = ParseBoundedJson(R"({"a":[1,{"b":[[[2]]]}],"c":"d"})", kLimits, "t");
  ASSERT_THAT(j, IsOk());
  EXPECT_EQ((*j)["c"], "d");
}

TEST(JsonFieldsTest, DeepNestingIsRefusedWithoutBuildingIt) {
  // 16 MiB of '[' once took 1.27 GB and 256 MiB aborted.
  const std::string deep(16 << 20, '[');
  EXPECT_THAT(ParseBoundedJson(deep, {32 << 20, 8}, "bundle manifest"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deeper than 8")));
  EXPECT_THAT(ParseBoundedJson("[[[[[[[[[1]]]]]]]]]", kLimits, "t"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("deeper than 8")));
  EXPECT_THAT(ParseBoundedJson("[[[[[[[[1]]]]]]]]", kLimits, "t"), IsOk());
}

TEST(JsonFieldsTest, SizeIsCheckedFirst) {
  EXPECT_THAT(ParseBoundedJson(std::string(100, ' ') + "1", {100, 8}, "tuning record"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tuning record: 101 bytes, more than the limit of 100")));
}

TEST(JsonFieldsTest, RepeatedKeysAreNamed) {
  EXPECT_THAT(
      ParseBoundedJson(R"({"files":[],"x":{"y":1,"y":2}})", kLimits, "t"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("duplicate key \"y\" in $.x")));
  EXPECT_THAT(ParseBoundedJson(R"({"files":[1],"files":[]})", kLimits, "t"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"files\"")));
  // The same key in sibling objects is fine.
  EXPECT_THAT(ParseBoundedJson(R"([{"a":1},{"a":2}])", kLimits, "t"), IsOk());
}

TEST(JsonFieldsTest, NotJsonIsInvalidArgument) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "nul"}) {
    EXPECT_THAT(ParseBoundedJson(bad, kLimits, "t"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid JSON")))
        << bad;
  }
}

TEST(JsonFieldsTest, UnknownFieldsAndTypedReaders) {
  absl::StatusOr<Json> j = ParseBoundedJson(
      R"({"name":"x","count":3,"neg":-1,"big":99999999999,"list":["a",1]})", kLimits, "t");
  ASSERT_THAT(j, IsOk());
  EXPECT_THAT(
      CheckKnownFields(*j, {"name", "count", "neg", "big"}, "where"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("where: unknown field 'list'")));
  std::string name;
  uint64_t count = 0;
  int i = 0;
  EXPECT_THAT(GetJsonString(*j, "name", true, "w", &name), IsOk());
  EXPECT_EQ(name, "x");
  EXPECT_THAT(GetJsonCount(*j, "count", true, "w", &count), IsOk());
  EXPECT_EQ(count, 3u);
  EXPECT_THAT(GetJsonCount(*j, "neg", true, "w", &count),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'neg' is not a count")));
  EXPECT_THAT(GetJsonInt(*j, "big", true, "w", &i),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'big' is out of range")));
  EXPECT_THAT(GetJsonString(*j, "absent", true, "w", &name),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("missing field 'absent'")));
  EXPECT_THAT(GetJsonString(*j, "absent", false, "w", &name), IsOk());
  std::vector<std::string> list;
  EXPECT_THAT(GetJsonStringList((*j)["list"], "list", &list),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("non-string")));
}

}  // namespace
}  // namespace jitgemm::cache
