// CacheSettings from the environment: precedence of the root variables,
// parsing of each knob, and bad values reported instead of silently used.
#include "cache/settings.h"

#include <cstdlib>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jitgemm::cache {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Reads from a map instead of the process environment.
GetEnvFunction Vars(std::map<std::string, std::string> vars) {
  return [vars](absl::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(SettingsTest, Defaults) {
  CacheSettings s = SettingsFromVariables(Vars({{"HOME", "/home/u"}}));
  EXPECT_EQ(s.root, "/home/u/.cache/jitgemm");
  EXPECT_EQ(s.mode, CacheMode::kReadWrite);
  EXPECT_EQ(s.max_bytes, uint64_t{2} << 30);
  EXPECT_EQ(s.lock_timeout, absl::Seconds(120));
  EXPECT_THAT(s.readonly_roots, IsEmpty());
  EXPECT_THAT(s.problems, IsEmpty());
}

TEST(SettingsTest, RootPrecedence) {
  EXPECT_EQ(SettingsFromVariables(
                Vars({{"JITGEMM_CACHE_DIR", "/c"}, {"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}}))
                .root,
            "/c");
  EXPECT_EQ(SettingsFromVariables(Vars({{"XDG_CACHE_HOME", "/x"}, {"HOME", "/h"}})).root,
            "/x/jitgemm");
  // The XDG spec says to ignore a relative XDG_CACHE_HOME.
  EXPECT_EQ(SettingsFromVariables(Vars({{"XDG_CACHE_HOME", "rel"}, {"HOME", "/h"}})).root,
            "/h/.cache/jitgemm");
  EXPECT_EQ(SettingsFromVariables(Vars({{"JITGEMM_CACHE_DIR", ""}, {"HOME", "/h"}})).root,
            "/h/.cache/jitgemm");
}

// Issue 19, item 7: a relative JITGEMM_CACHE_DIR was used as given, a
// different cache in every working directory.
TEST(SettingsTest, RelativeCacheDirIsRefusedWithAWarning) {
  CacheSettings s =
      SettingsFromVariables(Vars({{"JITGEMM_CACHE_DIR", "build/cache"}, {"HOME", "/h"}}));
  EXPECT_EQ(s.root, "/h/.cache/jitgemm");
  EXPECT_THAT(s.problems, ElementsAre(AllOf(HasSubstr("'build/cache' is not an absolute path"),
                                            HasSubstr("/h/.cache/jitgemm"))));
}

TEST(SettingsTest, WithoutHomeFallsBackToPasswordDatabase) {
  std::string root = SettingsFromVariables(Vars({})).root;
  EXPECT_THAT(root, ::testing::EndsWith("/.cache/jitgemm"));
}

TEST(SettingsTest, Modes) {
  auto mode = [](const char* v) {
    return SettingsFromVariables(Vars({{"JITGEMM_CACHE", v}})).mode;
  };
  EXPECT_EQ(mode("off"), CacheMode::kOff);
  EXPECT_EQ(mode("OFF"), CacheMode::kOff);
  EXPECT_EQ(mode("0"), CacheMode::kOff);
  EXPECT_EQ(mode("readonly"), CacheMode::kReadOnly);
  EXPECT_EQ(mode("readwrite"), CacheMode::kReadWrite);
  CacheSettings bad = SettingsFromVariables(Vars({{"JITGEMM_CACHE", "sometimes"}}));
  EXPECT_EQ(bad.mode, CacheMode::kReadWrite);
  EXPECT_THAT(bad.problems, ElementsAre(HasSubstr("JITGEMM_CACHE='sometimes'")));
}

TEST(SettingsTest, ReadOnlyDirsSplitOnColons) {
  CacheSettings s =
      SettingsFromVariables(Vars({{"JITGEMM_CACHE_READONLY_DIRS", "/opt/a::/opt/b:"}}));
  EXPECT_THAT(s.readonly_roots, ElementsAre("/opt/a", "/opt/b"));
}

TEST(SettingsTest, MaxBytes) {
  auto bytes = [](const char* v) {
    return SettingsFromVariables(Vars({{"JITGEMM_CACHE_MAX_BYTES", v}})).max_bytes;
  };
  EXPECT_EQ(bytes("12345"), 12345u);
  EXPECT_EQ(bytes("64K"), 64u << 10);
  EXPECT_EQ(bytes("100M"), 100u << 20);
  EXPECT_EQ(bytes("3G"), uint64_t{3} << 30);
  EXPECT_EQ(bytes("3GiB"), uint64_t{3} << 30);
  EXPECT_EQ(bytes("1T"), uint64_t{1} << 40);
  EXPECT_EQ(bytes("0"), 0u);
  for (const char* bad : {"lots", "-5", "1.5G", "99999999999999999999", "20000000000T"}) {
    CacheSettings s = SettingsFromVariables(Vars({{"JITGEMM_CACHE_MAX_BYTES", bad}}));
    EXPECT_EQ(s.max_bytes, kDefaultMaxBytes) << bad;
    EXPECT_THAT(s.problems, ElementsAre(HasSubstr("JITGEMM_CACHE_MAX_BYTES"))) << bad;
  }
}

TEST(SettingsTest, LockTimeout) {
  EXPECT_EQ(SettingsFromVariables(Vars({{"JITGEMM_CACHE_LOCK_TIMEOUT_S", "2.5"}})).lock_timeout,
            absl::Milliseconds(2500));
  CacheSettings bad = SettingsFromVariables(Vars({{"JITGEMM_CACHE_LOCK_TIMEOUT_S", "-1"}}));
  EXPECT_EQ(bad.lock_timeout, absl::Seconds(120));
  EXPECT_THAT(bad.problems, ElementsAre(HasSubstr("JITGEMM_CACHE_LOCK_TIMEOUT_S")));
}

TEST(SettingsTest, FromEnvironmentReadsTheProcessEnvironment) {
  setenv("JITGEMM_CACHE_DIR", "/from/env", 1);
  setenv("JITGEMM_CACHE", "readonly", 1);
  setenv("JITGEMM_CACHE_READONLY_DIRS", "/bundle", 1);
  setenv("JITGEMM_CACHE_MAX_BYTES", "1M", 1);
  CacheSettings s = CacheSettings::FromEnvironment();
  EXPECT_EQ(s.root, "/from/env");
  EXPECT_EQ(s.mode, CacheMode::kReadOnly);
  EXPECT_THAT(s.readonly_roots, ElementsAre("/bundle"));
  EXPECT_EQ(s.max_bytes, 1u << 20);
  for (const char* v : {"JITGEMM_CACHE_DIR", "JITGEMM_CACHE", "JITGEMM_CACHE_READONLY_DIRS",
                        "JITGEMM_CACHE_MAX_BYTES"}) {
    unsetenv(v);
  }
}

}  // namespace
}  // namespace jitgemm::cache
