// JITGEMM_REMOTE_CACHE and its companions (cache/remote_settings.h).
#include "cache/remote_settings.h"

#include <map>
#include <string>

#include "absl/strings/str_join.h"
#include "cache/settings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {
namespace {

using ::jitgemm::cache::testing::ScratchDir;
using ::jitgemm::cache::testing::StatusIs;
using ::jitgemm::cache::testing::WriteBytes;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

GetEnvFunction Vars(std::map<std::string, std::string> vars) {
  return [vars](absl::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(RemoteUrlTest, TcpWithCredentialsAndDb) {
  absl::StatusOr<RemoteEndpoint> e = ParseRemoteUrl("redis://alice:s3cret@cache.local:6380/2");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->host, "cache.local");
  EXPECT_EQ(e->port, 6380);
  EXPECT_EQ(e->user, "alice");
  EXPECT_EQ(e->password, "s3cret");
  EXPECT_EQ(e->db, 2);
  EXPECT_EQ(e->Redacted(), "redis://cache.local:6380/2");
}

TEST(RemoteUrlTest, DefaultsAndPasswordOnly) {
  absl::StatusOr<RemoteEndpoint> e = ParseRemoteUrl("redis://:pw@10.0.0.1");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->port, 6379);
  EXPECT_EQ(e->user, "");
  EXPECT_EQ(e->password, "pw");
  EXPECT_EQ(e->db, 0);
}

TEST(RemoteUrlTest, UnixSocket) {
  absl::StatusOr<RemoteEndpoint> e = ParseRemoteUrl("unix://:pw@/run/redis/redis.sock?db=3");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->unix_path, "/run/redis/redis.sock");
  EXPECT_EQ(e->password, "pw");
  EXPECT_EQ(e->db, 3);
  EXPECT_THAT(e->Redacted(), Not(HasSubstr("pw")));
}

TEST(RemoteUrlTest, BadUrlsAreRefusedWithoutTheirPassword) {
  for (const char* url : {"http://host:1", "redis://:hunter2@host:0", "redis://:hunter2@host:x",
                          "redis://:hunter2@host:1/db", "redis://:hunter2@", "unix://relative",
                          "unix://:hunter2@/s?x=1"}) {
    absl::StatusOr<RemoteEndpoint> e = ParseRemoteUrl(url);
    EXPECT_THAT(e, StatusIs(absl::StatusCode::kInvalidArgument, Not(HasSubstr("hunter2")))) << url;
  }
}

TEST(RemoteSettingsTest, UnsetMeansOff) {
  EXPECT_FALSE(RemoteSettingsFromVariables(Vars({})).enabled);
  EXPECT_FALSE(RemoteSettingsFromVariables(Vars({{"JITGEMM_REMOTE_CACHE", ""}})).enabled);
}

TEST(RemoteSettingsTest, TimeoutsDefaultNear100And250Ms) {
  RemoteSettings s = RemoteSettingsFromVariables(Vars({{"JITGEMM_REMOTE_CACHE", "redis://h:1"}}));
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.connect_timeout, absl::Milliseconds(100));
  EXPECT_EQ(s.command_timeout, absl::Milliseconds(250));
  EXPECT_THAT(s.problems, IsEmpty());
}

TEST(RemoteSettingsTest, VariablesAreRead) {
  RemoteSettings s = RemoteSettingsFromVariables(Vars({
      {"JITGEMM_REMOTE_CACHE", "redis://h:1"},
      {"JITGEMM_REMOTE_CACHE_CONNECT_TIMEOUT_MS", "50"},
      {"JITGEMM_REMOTE_CACHE_TIMEOUT_MS", "75.5"},
      {"JITGEMM_REMOTE_CACHE_LOCK_TTL_MS", "1000"},
      {"JITGEMM_REMOTE_CACHE_RETRY_S", "0"},
      {"JITGEMM_REMOTE_CACHE_MAX_VALUE_BYTES", "8M"},
  }));
  EXPECT_EQ(s.connect_timeout, absl::Milliseconds(50));
  EXPECT_EQ(s.command_timeout, absl::Microseconds(75500));
  EXPECT_EQ(s.lock_ttl, absl::Seconds(1));
  EXPECT_EQ(s.retry_after, absl::ZeroDuration());
  EXPECT_EQ(s.max_value_bytes, uint64_t{8} << 20);
  EXPECT_THAT(s.problems, IsEmpty());
}

TEST(RemoteSettingsTest, BadNumbersKeepDefaultsAndSayWhich) {
  RemoteSettings s = RemoteSettingsFromVariables(Vars({
      {"JITGEMM_REMOTE_CACHE", "redis://h:1"},
      {"JITGEMM_REMOTE_CACHE_TIMEOUT_MS", "-3"},
      {"JITGEMM_REMOTE_CACHE_MAX_VALUE_BYTES", "1T"},
  }));
  EXPECT_EQ(s.command_timeout, absl::Milliseconds(250));
  EXPECT_EQ(s.max_value_bytes, kDefaultRemoteMaxValueBytes);
  EXPECT_THAT(absl::StrJoin(s.problems, "\n"), HasSubstr("JITGEMM_REMOTE_CACHE_TIMEOUT_MS"));
  EXPECT_THAT(absl::StrJoin(s.problems, "\n"), HasSubstr("JITGEMM_REMOTE_CACHE_MAX_VALUE_BYTES"));
}

TEST(RemoteSettingsTest, BadUrlIsAProblemWithoutThePassword) {
  RemoteSettings s =
      RemoteSettingsFromVariables(Vars({{"JITGEMM_REMOTE_CACHE", "rediss://:hunter2@h:1"}}));
  EXPECT_FALSE(s.enabled);
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_THAT(s.problems[0], Not(HasSubstr("hunter2")));
}

TEST(RemoteSettingsTest, SecretFileIsReadWithoutItsNewline) {
  ScratchDir dir;
  WriteBytes(dir.Sub("secret"), "0123456789abcdef0123\n");
  RemoteSettings s =
      RemoteSettingsFromVariables(Vars({{"JITGEMM_REMOTE_CACHE", "redis://h:1"},
                                        {"JITGEMM_REMOTE_CACHE_SECRET_FILE", dir.Sub("secret")}}));
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.secret, "0123456789abcdef0123");
}

TEST(RemoteSettingsTest, MissingOrShortSecretTurnsTheTierOffWithoutShowingIt) {
  ScratchDir dir;
  WriteBytes(dir.Sub("short"), "tooshort");
  for (const std::string& file : {dir.Sub("absent"), dir.Sub("short")}) {
    RemoteSettings s = RemoteSettingsFromVariables(Vars(
        {{"JITGEMM_REMOTE_CACHE", "redis://h:1"}, {"JITGEMM_REMOTE_CACHE_SECRET_FILE", file}}));
    EXPECT_FALSE(s.enabled) << file;
    EXPECT_TRUE(s.secret.empty());
    ASSERT_EQ(s.problems.size(), 1u);
    EXPECT_THAT(s.problems[0], HasSubstr("remote tier is off"));
    EXPECT_THAT(s.problems[0], Not(HasSubstr("tooshort")));
  }
}

TEST(RemoteSettingsTest, CacheSettingsCarryTheRemoteTierAndItsProblems) {
  CacheSettings s = SettingsFromVariables(Vars({{"HOME", "/home/u"},
                                                {"JITGEMM_REMOTE_CACHE", "redis://h:7/1"},
                                                {"JITGEMM_REMOTE_CACHE_RETRY_S", "x"}}));
  EXPECT_TRUE(s.remote.enabled);
  EXPECT_EQ(s.remote.endpoint.db, 1);
  EXPECT_THAT(absl::StrJoin(s.problems, "\n"), HasSubstr("JITGEMM_REMOTE_CACHE_RETRY_S"));
}

}  // namespace
}  // namespace jitgemm::cache
