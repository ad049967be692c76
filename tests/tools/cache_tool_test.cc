// jitgemm-cache as a separate process (issue 19): commands that only look
// create nothing (item 6), import fails with a message on a damaged manifest
// (item 4), and signed bundles (export --sign-key, JITGEMM_CACHE_TRUSTED_KEYS).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "cache/bundle.h"
#include "cache/layout.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/second_user.h"
#include "tests/cache/test_util.h"
#include "tests/tools/bundle_fixture.h"
#include "tests/tools/subprocess.h"

namespace jitgemm::tools {
namespace {

namespace fs = std::filesystem;
using cache::testing::FilesUnder;
using cache::testing::ScratchDir;
using cache::testing::SecondUser;
using cache::testing::WriteBytes;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunResult;
using testing::RunTool;

const std::string kCacheTool = JITGEMM_CACHE_TOOL_PATH;

TEST(CacheToolTrustTest, StatsAndVerifyCreateNothing) {
  ScratchDir dir;
  for (const char* command : {"stats", "verify"}) {
    RunResult r = RunTool({kCacheTool, command}, {{"JITGEMM_CACHE_DIR", dir.Sub("absent")}});
    EXPECT_THAT(r.output, HasSubstr("root")) << r.output;
    EXPECT_FALSE(fs::exists(dir.Sub("absent"))) << command;
  }
  // An existing root, as /etc was: no v1/{cubin,tuning,locks} appear in it.
  fs::create_directories(dir.Sub("etc"));
  RunResult r = RunTool({kCacheTool, "stats"}, {{"JITGEMM_CACHE_DIR", dir.Sub("etc")}});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_empty(dir.Sub("etc"))) << r.output;
}

TEST(CacheToolTrustTest, StatsOnARootOfAnotherUserCreatesNothing) {
  SecondUser other;
  if (!other.unavailable().empty()) GTEST_SKIP() << other.unavailable();
  ScratchDir dir;
  fs::create_directories(dir.Sub("theirs"));
  other.Own(dir.Sub("theirs"));
  RunResult r = RunTool({kCacheTool, "stats"}, {{"JITGEMM_CACHE_DIR", dir.Sub("theirs")}});
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("belongs to uid ", other.uid())));
  EXPECT_TRUE(fs::is_empty(dir.Sub("theirs"))) << r.output;
}

TEST(CacheToolTrustTest, ImportOfADamagedManifestFailsWithAMessage) {
  ScratchDir dir;
  cache::Fill(dir.Sub("cache"), 2);
  ASSERT_TRUE(
      cache::ExportBundle(cache::WholeCache(dir.Sub("cache"), dir.Sub("b")), cache::Env::Default())
          .ok());
  WriteBytes(dir.Sub("b/jitgemm-bundle.json"), "[[[[");
  RunResult r = RunTool({kCacheTool, "import", "--from=" + dir.Sub("b")},
                        {{"JITGEMM_CACHE_DIR", dir.Sub("target")}});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("not importing"));
  EXPECT_THAT(r.output, HasSubstr("jitgemm-bundle.json"));
  EXPECT_TRUE(FilesUnder(dir.Sub("target")).empty()) << r.output;
}

TEST(CacheToolTrustTest, PrintedNamesAreEscaped) {
  ScratchDir dir;
  const std::string evil = dir.Sub("a\nb\x1b[2J");
  RunResult r = RunTool({kCacheTool, "stats"}, {{"JITGEMM_CACHE_DIR", evil}});
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  EXPECT_THAT(r.output, HasSubstr("a\\nb\\x1b[2J"));
}

TEST(CacheToolTrustTest, SignedExportVerifyAndImportThroughTheCommandLine) {
  ScratchDir dir;
  cache::Fill(dir.Sub("cache"), 2);
  RunResult r = RunTool({kCacheTool, "keygen", "--out=" + dir.Sub("release")}, {});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunTool({kCacheTool, "keygen", "--out=" + dir.Sub("other")}, {});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  struct stat st;
  ASSERT_EQ(::stat(dir.Sub("release.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  r = RunTool({kCacheTool, "export", "--out=" + dir.Sub("b.tar"),
               "--sign-key=" + dir.Sub("release.key")},
              {{"JITGEMM_CACHE_DIR", dir.Sub("cache")}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunTool({kCacheTool, "verify-bundle", "--from=" + dir.Sub("b.tar")},
              {{"JITGEMM_CACHE_TRUSTED_KEYS", dir.Sub("release.pub")}});
  EXPECT_THAT(r.output, HasSubstr("(trusted here)"));
  EXPECT_THAT(r.output, HasSubstr("bundle"));
  EXPECT_NE(r.exit_code, 1) << r.output;  // 2: intact, keys made for another build
  r = RunTool({kCacheTool, "import", "--from=" + dir.Sub("b.tar")},
              {{"JITGEMM_CACHE_DIR", dir.Sub("wrong")},
               {"JITGEMM_CACHE_TRUSTED_KEYS", dir.Sub("other.pub")}});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("not among"));
  EXPECT_TRUE(FilesUnder(dir.Sub("wrong")).empty());
  r = RunTool({kCacheTool, "import", "--from=" + dir.Sub("b.tar")},
              {{"JITGEMM_CACHE_DIR", dir.Sub("right")},
               {"JITGEMM_CACHE_TRUSTED_KEYS", dir.Sub("other.pub") + ":" + dir.Sub("release.pub")}});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("imported 4 entries"));
}

}  // namespace
}  // namespace jitgemm::tools
