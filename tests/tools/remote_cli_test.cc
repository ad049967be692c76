// jitgemm-cache remote stats | push | pull as processes, against a real
// redis-server (tests/cache/redis_server.h). Entries are planted with fake
// payloads under the real keys of the seed003 manifest's kernels, so no
// compiler is needed: push and pull move bytes and check envelopes, keys and
// checksums, not cubins.
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "api/src/manifest_kernels.h"
#include "cache/disk_cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/redis_server.h"
#include "tests/cache/test_util.h"
#include "tests/tools/subprocess.h"

namespace jitgemm::tools {
namespace {

using ::jitgemm::cache::testing::RedisServer;
using ::jitgemm::cache::testing::ScratchDir;
using ::jitgemm::cache::testing::TestSettings;
using ::jitgemm::cache::testing::WriteBytes;
using ::jitgemm::tools::testing::RunResult;
using ::jitgemm::tools::testing::RunTool;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kCacheTool[] = JITGEMM_CACHE_TOOL_PATH;
const std::string kSeed003 = std::string(JITGEMM_MANIFEST_DIR) + "/seed003_small_m_linear.json";

class RemoteCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisServer>> s = RedisServer::Start(dir_.path(), "pw-cli-1618");
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(s).value();
    WriteBytes(dir_.Sub("secret"), "cli-test-secret-0123456789\n");
  }

  std::map<std::string, std::string> Env(const std::string& root) {
    return {{"JITGEMM_CACHE_DIR", dir_.Sub(root)},
            {"JITGEMM_REMOTE_CACHE", server_->Url()},
            {"JITGEMM_REMOTE_CACHE_SECRET_FILE", dir_.Sub("secret")}};
  }

  ScratchDir dir_;
  std::unique_ptr<RedisServer> server_;
};

TEST_F(RemoteCliTest, StatsAndPushOfALocalCache) {
  auto local = cache::DiskCache::Open(TestSettings(dir_.Sub("a")));
  for (int i = 0; i < 3; ++i) {
    local->Store(cache::MakeCacheKey(absl::StrCat("arch=sm_90a\nkernel=", i)),
                 cache::EntryKind::kCubin, absl::StrCat("payload ", i));
  }
  local->Store(cache::MakeCacheKey("jitgemm-tuning-key v1\nproblem=x\n"),
               cache::EntryKind::kTuningRecord, "{}");
  RunResult r = RunTool({kCacheTool, "remote", "stats"}, Env("a"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cubin keys: 0"));
  EXPECT_THAT(r.output, HasSubstr("signed and checked"));
  EXPECT_THAT(r.output, Not(HasSubstr("pw-cli-1618")));
  r = RunTool({kCacheTool, "remote", "push"}, Env("a"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("pushed 4 of 4 entries"));
  r = RunTool({kCacheTool, "remote", "stats"}, Env("a"));
  EXPECT_THAT(r.output, HasSubstr("cubin keys: 3"));
  EXPECT_THAT(r.output, HasSubstr("tuning keys: 1"));
}

TEST_F(RemoteCliTest, PullFetchesWhatAManifestNeeds) {
  absl::StatusOr<TargetArch> target = ResolveTarget("sm_90a", 0);
  ASSERT_TRUE(target.ok()) << target.status();
  absl::StatusOr<ManifestKernels> kernels =
      LoadManifestKernels({kSeed003}, *target, TuningPolicy::kHeuristic);
  ASSERT_TRUE(kernels.ok()) << kernels.status();
  ASSERT_GT(kernels->kernels.size(), 0u);
  // The tool computes the same keys in its own process: same NVRTC answer
  // (or the same build's CUDA version where there is no NVRTC).
  auto source = cache::DiskCache::Open(TestSettings(dir_.Sub("src")));
  for (const ManifestKernel& k : kernels->kernels) {
    absl::StatusOr<cache::CacheKey> key = KernelCacheKey(k.source, "sm_90a");
    ASSERT_TRUE(key.ok());
    source->Store(*key, cache::EntryKind::kCubin, "fake cubin of " + k.source.kernel_name);
  }
  const size_t n = kernels->kernels.size();
  RunResult r = RunTool({kCacheTool, "remote", "push"}, Env("src"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<std::string> pull = {kCacheTool,      "remote",
                                         "pull",          "--manifest=" + kSeed003,
                                         "--arch=sm_90a", "--tuning=heuristic"};
  r = RunTool(pull, Env("c"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat(n, " kernels for sm_90a: 0 already local, ", n,
                                               " fetched, 0 in neither")));
  r = RunTool(pull, Env("c"));
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat(n, " already local, 0 fetched")));
  // Pulled entries are on c's disk: a process without the remote finds them.
  auto c = cache::DiskCache::Open(TestSettings(dir_.Sub("c")));
  EXPECT_EQ(c->Usage()->entries, n);
  // A reader with another secret gets nothing.
  WriteBytes(dir_.Sub("other-secret"), "another-secret-0123456789\n");
  std::map<std::string, std::string> env = Env("d");
  env["JITGEMM_REMOTE_CACHE_SECRET_FILE"] = dir_.Sub("other-secret");
  r = RunTool(pull, env);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat("0 fetched, ", n, " in neither")));
}

TEST_F(RemoteCliTest, WithoutARemoteTierSaysHowToSetOne) {
  RunResult r = RunTool({kCacheTool, "remote", "stats"},
                        {{"JITGEMM_CACHE_DIR", dir_.Sub("a")}, {"JITGEMM_REMOTE_CACHE", ""}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("JITGEMM_REMOTE_CACHE=redis://"));
  r = RunTool({kCacheTool, "remote", "sideways"}, Env("a"));
  EXPECT_EQ(r.exit_code, 64);
}

}  // namespace
}  // namespace jitgemm::tools
