// jitgemm-warmup and jitgemm-cache as separate processes, the way CI and a
// deployment use them. No GPU: kernels are compiled for sm_90a offline.
//
// The CI scenario of the offline warm-up issue: warm the seed manifests for
// sm_90a, export a bundle, then a new process with an empty writable cache,
// the bundle as a read-only root and JITGEMM_JIT=off resolves every kernel
// of those manifests with zero compiles.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "api/src/manifest_kernels.h"
#include "cache/bundle.h"
#include "cache/disk_cache.h"
#include "cache/layout.h"
#include "core/options_signature.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/nvrtc_compiler.h"
#include "tests/cache/test_util.h"
#include "tests/tools/subprocess.h"
#include "tune/tuning_key.h"

namespace jitgemm::tools {
namespace {

namespace fs = std::filesystem;
using cache::testing::EntriesUnder;
using cache::testing::ScratchDir;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::RunResult;
using testing::RunTool;

const std::string kWarmup = JITGEMM_WARMUP_PATH;
const std::string kCacheTool = JITGEMM_CACHE_TOOL_PATH;

std::vector<std::string> SeedManifests() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(JITGEMM_MANIFEST_DIR)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("seed", 0) == 0 && e.path().extension() == ".json") {
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Seed003() {
  for (const std::string& m : SeedManifests()) {
    if (m.find("seed003") != std::string::npos) return m;
  }
  return "";
}

// Expected cache entries of `manifests` for sm_90a, heuristic tuning,
// computed in this process.
std::set<std::string> ExpectedKernels(const std::vector<std::string>& manifests) {
  std::set<std::string> out;
  absl::StatusOr<TargetArch> target = ResolveTarget("sm_90a", 0);
  EXPECT_TRUE(target.ok());
  absl::StatusOr<ManifestKernels> k =
      LoadManifestKernels(manifests, *target, TuningPolicy::kHeuristic);
  EXPECT_TRUE(k.ok()) << k.status();
  if (!k.ok()) return out;
  for (const ManifestKernel& kernel : k->kernels) {
    absl::StatusOr<cache::CacheKey> key = KernelCacheKey(kernel.source, "sm_90a");
    EXPECT_TRUE(key.ok());
    out.insert(cache::EntryRelativePath(cache::EntryKind::kCubin, *key));
  }
  return out;
}

std::vector<std::string> Args(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

// Each test has its own scratch directory; tests that compile skip where
// NVRTC cannot be loaded. (ctest runs every test in its own process, so a
// cache shared by the suite would be warmed once per test anyway.)
class ToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Keys computed here must match the child processes', which get no
    // JITGEMM_* variables.
    ::unsetenv("JITGEMM_NVRTC_VERSION");
  }

  // Compiles the kernels of `manifests` into `cache` (heuristic tuning, 2 jobs).
  void Warm(const std::string& cache, const std::vector<std::string>& manifests) {
    if (!jit::NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC cannot be loaded here: nothing to warm";
    const auto start = std::chrono::steady_clock::now();
    warm_ = RunTool(
        Args({kWarmup, "--arch=sm_90a", "--jobs=2", "--tuning=heuristic", "--progress=false"},
             manifests),
        {{"JITGEMM_CACHE_DIR", cache}});
    warm_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_EQ(warm_.exit_code, 0) << warm_.output;
  }

  std::string Sub(const std::string& name) const { return dir_.Sub(name); }
  std::string Cache() const { return dir_.Sub("cache"); }

  ScratchDir dir_;
  RunResult warm_;
  double warm_seconds_ = 0;
};

// Runs `jitgemm-warmup --check` on the seeds in a new process with JIT off,
// an empty writable root and `readonly` (may be empty) as read-only root.
RunResult CheckSeeds(const std::string& writable, const std::string& readonly) {
  std::map<std::string, std::string> env = {{"JITGEMM_CACHE_DIR", writable},
                                            {"JITGEMM_JIT", "off"}};
  if (!readonly.empty()) env["JITGEMM_CACHE_READONLY_DIRS"] = readonly;
  return RunTool(Args({kWarmup, "--check", "--arch=sm_90a", "--jobs=2", "--tuning=heuristic",
                       "--progress=false"},
                      SeedManifests()),
                 env);
}

// "| sm_90a | problems | invalid | kernels | found | missing | time |".
void ExpectAllFound(const RunResult& r, size_t kernels) {
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.output, m, std::regex(R"(\| sm_90a \| (\d+) \| 0 \| (\d+) \| (\d+) \| (\d+) \|)")))
      << r.output;
  EXPECT_EQ(std::stoul(m[2]), kernels);
  EXPECT_EQ(std::stoul(m[3]), kernels) << "found";
  EXPECT_EQ(std::stoul(m[4]), 0u) << "missing";
  EXPECT_THAT(r.output, HasSubstr("kernel store: 0 compiles"));
  EXPECT_THAT(r.output, HasSubstr(absl::StrCat(kernels, " hits, 0 misses, 0 corrupt, 0 stores")));
  EXPECT_THAT(r.output, HasSubstr("check passed"));
}

TEST_F(ToolsTest, CiScenarioBundleReadOnlyJitOffZeroCompiles) {
  const std::vector<std::string> seeds = SeedManifests();
  ASSERT_EQ(seeds.size(), 4u);
  Warm(Cache(), seeds);
  if (IsSkipped() || HasFatalFailure()) return;
  const std::set<std::string> expected = ExpectedKernels(seeds);
  ASSERT_FALSE(expected.empty());
  EXPECT_THAT(warm_.output,
              HasSubstr(absl::StrCat("| ", expected.size(), " | ", expected.size(), " | 0 | 0 |")));
  std::printf("warmed %zu kernels for sm_90a in %.1f s\n", expected.size(), warm_seconds_);

  const std::string manifests = absl::StrJoin(seeds, ",");
  const std::map<std::string, std::string> env = {{"JITGEMM_CACHE_DIR", Cache()}};
  for (const std::string& out : {Sub("bundle"), Sub("bundle.tar")}) {
    RunResult r = RunTool({kCacheTool, "export", "--out=" + out, "--manifest=" + manifests,
                           "--arch=sm_90a", "--tuning=heuristic"},
                          env);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr(absl::StrCat("entries: ", expected.size())));
  }
  EXPECT_EQ(EntriesUnder(Sub("bundle")), expected);
  RunResult v =
      RunTool({kCacheTool, "verify-bundle", "--from=" + Sub("bundle.tar"), "--arch=sm_90a"}, {});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_THAT(v.output, HasSubstr("bundle OK"));
  // The archive, unpacked by the tool itself.
  RunResult unpack = RunTool(
      {kCacheTool, "export", "--from=" + Sub("bundle.tar"), "--out=" + Sub("unpacked")}, {});
  ASSERT_EQ(unpack.exit_code, 0) << unpack.output;

  // Deployed read-only: a new process, empty writable root, JIT off.
  for (const std::string& bundle : {Sub("bundle"), Sub("unpacked")}) {
    SCOPED_TRACE(bundle);
    cache::testing::ChmodTree(bundle, 0555);
    const std::string empty = Sub("empty-" + fs::path(bundle).filename().string());
    fs::create_directory(empty);
    ::chmod(empty.c_str(), 0700);
    RunResult r = CheckSeeds(empty, bundle);
    ExpectAllFound(r, expected.size());
    EXPECT_THAT(EntriesUnder(empty), IsEmpty());
    EXPECT_EQ(EntriesUnder(bundle), expected);
  }

  // Imported into a writable cache instead: also zero compiles.
  RunResult imported = RunTool({kCacheTool, "import", "--from=" + Sub("bundle.tar")},
                               {{"JITGEMM_CACHE_DIR", Sub("imported")}});
  ASSERT_EQ(imported.exit_code, 0) << imported.output;
  EXPECT_THAT(imported.output, HasSubstr(absl::StrCat("imported ", expected.size(), " entries")));
  ExpectAllFound(CheckSeeds(Sub("imported"), ""), expected.size());
}

// Issue 19, item 5: a cap below the working set reported "N stores" and exit
// 0 with nothing left on disk.
TEST_F(ToolsTest, SizeCapThatCannotHoldTheWarmUpSaysSo) {
  if (!jit::NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC cannot be loaded here: nothing to warm";
  RunResult r = RunTool(
      {kWarmup, "--arch=sm_90a", "--jobs=2", "--tuning=heuristic", "--progress=false", Seed003()},
      {{"JITGEMM_CACHE_DIR", Cache()}, {"JITGEMM_CACHE_MAX_BYTES", "0"}});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot hold what this warm-up stored"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr(" 0 evictions")));
}

TEST_F(ToolsTest, CheckReportsMissingKernels) {
  // Needs no compiler: --check only computes keys and looks.
  fs::create_directory(Sub("nothing"));
  ::chmod(Sub("nothing").c_str(), 0700);
  RunResult r = CheckSeeds(Sub("nothing"), "");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("MISSING"));
  EXPECT_THAT(r.output, HasSubstr("run-time compilation is off"));
  EXPECT_THAT(r.output, HasSubstr("kernel store: 0 compiles"));
  EXPECT_THAT(r.output, HasSubstr("check FAILED"));
  EXPECT_THAT(EntriesUnder(Sub("nothing")), IsEmpty());
}

TEST_F(ToolsTest, ManifestSubsetExportHoldsExactlyItsKernels) {
  const std::string seed003 = Seed003();
  ASSERT_FALSE(seed003.empty());
  // seed003 and the (small) seed000: the cache holds more than the subset.
  std::string seed000;
  for (const std::string& m : SeedManifests()) {
    if (m.find("seed000") != std::string::npos) seed000 = m;
  }
  Warm(Cache(), {seed000, seed003});
  if (IsSkipped() || HasFatalFailure()) return;
  // A copy of the warmed cache with two tuning records: one for a problem of
  // seed003, one for a problem of no manifest.
  const std::string copy = Sub("subset-cache");
  fs::copy(Cache(), copy, fs::copy_options::recursive);
  absl::StatusOr<TargetArch> target = ResolveTarget("sm_90a", 0);
  ASSERT_TRUE(target.ok());
  absl::StatusOr<ManifestKernels> k =
      LoadManifestKernels({seed003}, *target, TuningPolicy::kHeuristic);
  ASSERT_TRUE(k.ok());
  ASSERT_FALSE(k->signatures.empty());
  const std::string options = OptionsSignature(Options());
  const cache::CacheKey ours =
      cache::MakeCacheKey(tune::TuningKeyText(k->signatures[0], options, {}));
  const cache::CacheKey other =
      cache::MakeCacheKey(tune::TuningKeyText("not-in-any-manifest", options, {}));
  {
    std::shared_ptr<cache::DiskCache> c =
        cache::DiskCache::Open(cache::testing::TestSettings(copy));
    c->Store(ours, cache::EntryKind::kTuningRecord, "{}");
    c->Store(other, cache::EntryKind::kTuningRecord, "{}");
  }
  std::set<std::string> expected = ExpectedKernels({seed003});
  ASSERT_LT(expected.size(), EntriesUnder(Cache()).size());  // a real subset

  const std::map<std::string, std::string> env = {{"JITGEMM_CACHE_DIR", copy}};
  RunResult r =
      RunTool({kCacheTool, "export", "--out=" + Sub("subset.tar"), "--manifest=" + seed003,
               "--arch=sm_90a", "--tuning=heuristic", "--tuning-records=false"},
              env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunTool({kCacheTool, "export", "--from=" + Sub("subset.tar"), "--out=" + Sub("subset")}, {});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(EntriesUnder(Sub("subset")), expected);

  r = RunTool({kCacheTool, "export", "--out=" + Sub("subset-tuned"), "--manifest=" + seed003,
               "--arch=sm_90a", "--tuning=heuristic"},
              env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expected.insert(cache::EntryRelativePath(cache::EntryKind::kTuningRecord, ours));
  EXPECT_EQ(EntriesUnder(Sub("subset-tuned")), expected);

  // Kernels of an arch nobody warmed: reported, exit 1.
  r = RunTool({kCacheTool, "export", "--out=" + Sub("sm80"), "--manifest=" + seed003,
               "--arch=sm_80", "--tuning=heuristic"},
              env);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("MISSING"));
  EXPECT_THAT(r.output, HasSubstr("warm them first"));
}

// A gated problem (B = [gate | up]) in a manifest warms what Plan::Create
// would need: the sm90 kernel that computes both halves, and the gate pass of
// the cuBLAS route (the backend policy is auto).
TEST_F(ToolsTest, GatedManifestWarmsTheGatedKernel) {
  const std::string manifest = Sub("gated.json");
  {
    std::ofstream out(manifest);
    out << R"({"version": 1, "options": {"tuning": "heuristic"}, "problems": [
      {"name": "mlp gate+up", "m": 128, "n": 512, "k": 256,
       "a": {"type": "bf16"}, "b": {"type": "bf16", "layout": "col"}, "d": {"type": "bf16"},
       "epilogue": {"activation": "silu", "gate": "halves"}}]})";
  }
  Warm(Cache(), {manifest});
  if (IsSkipped() || HasFatalFailure()) return;
  const std::set<std::string> expected = ExpectedKernels({manifest});
  ASSERT_EQ(expected.size(), 2u);
  EXPECT_EQ(EntriesUnder(Cache()), expected);
  absl::StatusOr<TargetArch> target = ResolveTarget("sm_90a", 0);
  ASSERT_TRUE(target.ok());
  absl::StatusOr<ManifestKernels> k =
      LoadManifestKernels({manifest}, *target, TuningPolicy::kHeuristic);
  ASSERT_TRUE(k.ok()) << k.status();
  std::set<std::string> names;
  for (const ManifestKernel& kernel : k->kernels) {
    names.insert(kernel.source.kernel_name.substr(0, kernel.source.kernel_name.find("_bf16")));
    EXPECT_THAT(kernel.source.kernel_name, HasSubstr("_silu_glu"));
  }
  EXPECT_EQ(names, (std::set<std::string>{"gemm_sm90", "gemm_gate"}));
}

}  // namespace
}  // namespace jitgemm::tools
