// jitgemm-cache as a separate process (issue 19): commands that only look
// create nothing (item 6), import fails with a message on a damaged manifest
// (item 4), and signed bundles (export --sign-key, JITGEMM_CACHE_TRUSTED_KEYS);
// stats, verify, prune, clear and import over a filled cache.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cache/bundle.h"
#include "cache/disk_cache.h"
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
using cache::testing::EntriesUnder;
using cache::testing::FilesUnder;
using cache::testing::ScratchDir;
using cache::testing::SecondUser;
using cache::testing::WriteBytes;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
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
  r = RunTool(
      {kCacheTool, "export", "--out=" + dir.Sub("b.tar"), "--sign-key=" + dir.Sub("release.key")},
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
  r = RunTool(
      {kCacheTool, "import", "--from=" + dir.Sub("b.tar")},
      {{"JITGEMM_CACHE_DIR", dir.Sub("right")},
       {"JITGEMM_CACHE_TRUSTED_KEYS", dir.Sub("other.pub") + ":" + dir.Sub("release.pub")}});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("imported 4 entries"));
}

// Stats, verify, prune, clear and import over a filled cache, no NVRTC.

struct Filled {
  std::vector<cache::CacheKey> keys;
  std::vector<uint64_t> sizes;
  std::vector<std::string> paths;
};

// `n` entries of distinct sizes, entry i last used i minutes after a base.
Filled Fill(const std::string& root, int n) {
  std::shared_ptr<cache::DiskCache> c = cache::DiskCache::Open(cache::testing::TestSettings(root));
  Filled f;
  const absl::Time base = absl::Now() - absl::Hours(2);
  for (int i = 0; i < n; ++i) {
    cache::CacheKey key = cache::MakeCacheKey(absl::StrCat("jitgemm-kernel-key\nname=k", i, "\n"));
    const std::string payload = cache::testing::PayloadFor(key.text, 1000 * (i + 1));
    c->Store(key, cache::EntryKind::kCubin, payload);
    f.paths.push_back(cache::EntryPath(root, cache::EntryKind::kCubin, key));
    f.sizes.push_back(cache::EncodeEntry(key, cache::EntryKind::kCubin, payload).size());
    cache::testing::SetMtime(f.paths.back(), base + absl::Minutes(i));
    f.keys.push_back(key);
  }
  return f;
}

TEST(CacheToolTest, StatsVerifyPruneClear) {
  ScratchDir dir;
  const std::string root = dir.Sub("cache");
  const Filled f = Fill(root, 6);
  const std::map<std::string, std::string> env = {{"JITGEMM_CACHE_DIR", root}};

  RunResult r = RunTool({kCacheTool, "stats"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("| ", root, " | writable | cubin | 6 |")));
  EXPECT_THAT(r.output, HasSubstr("mode: readwrite"));

  r = RunTool({kCacheTool, "verify"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::string bytes = cache::testing::ReadBytes(f.paths[0]);
  bytes[50] ^= 0x10;
  cache::testing::WriteBytes(f.paths[0], bytes);
  r = RunTool({kCacheTool, "verify"}, env);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("corrupt: ", f.paths[0])));
  r = RunTool({kCacheTool, "verify", "--remove-corrupt"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("removed 1 corrupt entries"));
  EXPECT_FALSE(cache::testing::Exists(f.paths[0]));

  // Entries 1..5 are left, oldest first. A cap that holds the newest three
  // evicts exactly 1 and 2.
  const uint64_t cap = f.sizes[3] + f.sizes[4] + f.sizes[5];
  r = RunTool({kCacheTool, "prune", absl::StrCat("--max-bytes=", cap)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr(absl::StrCat("removed 2 entries, ", f.sizes[1] + f.sizes[2], " bytes")));
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("left 3 entries, ", cap, " bytes")));
  EXPECT_FALSE(cache::testing::Exists(f.paths[1]));
  EXPECT_FALSE(cache::testing::Exists(f.paths[2]));
  EXPECT_TRUE(cache::testing::Exists(f.paths[3]));
  r = RunTool({kCacheTool, "prune", "--max-bytes=1K"}, env);  // suffixes: powers of 1024
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("left 0 entries"));
  r = RunTool({kCacheTool, "prune", "--max-bytes=lots"}, env);
  EXPECT_EQ(r.exit_code, 64) << r.output;

  Fill(root, 3);
  r = RunTool({kCacheTool, "clear"}, env);  // stdin is /dev/null: no one to ask
  EXPECT_EQ(r.exit_code, 64) << r.output;
  EXPECT_THAT(r.output, HasSubstr("without --yes"));
  EXPECT_EQ(EntriesUnder(root).size(), 3u);
  r = RunTool({kCacheTool, "clear", "--yes"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("removed 3 entries"));
  EXPECT_THAT(EntriesUnder(root), IsEmpty());

  r = RunTool({kCacheTool, "frobnicate"}, env);
  EXPECT_EQ(r.exit_code, 64);
  r = RunTool({kCacheTool, "export"}, env);
  EXPECT_EQ(r.exit_code, 64);
}

TEST(CacheToolTest, ImportSkipsCorruptEntriesAndSaysSo) {
  ScratchDir dir;
  const Filled f = Fill(dir.Sub("cache"), 4);
  RunResult r = RunTool({kCacheTool, "export", "--out=" + dir.Sub("b")},
                        {{"JITGEMM_CACHE_DIR", dir.Sub("cache")}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string victim =
      dir.Sub("b/" + cache::EntryRelativePath(cache::EntryKind::kCubin, f.keys[2]));
  std::string bytes = cache::testing::ReadBytes(victim);
  bytes[bytes.size() / 2] ^= 0x01;
  cache::testing::WriteBytes(victim, bytes);

  r = RunTool({kCacheTool, "verify-bundle", "--from=" + dir.Sub("b")}, {});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("corrupt: " + victim));
  r = RunTool({kCacheTool, "import", "--from=" + dir.Sub("b")},
              {{"JITGEMM_CACHE_DIR", dir.Sub("new")}});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("imported 3 entries"));
  EXPECT_THAT(r.output, HasSubstr("skipped 1 corrupt"));
  EXPECT_EQ(EntriesUnder(dir.Sub("new")).size(), 3u);
}

}  // namespace
}  // namespace jitgemm::tools
