// jitgemm-bench as a separate process with --list, which needs no GPU: the
// new suites' rows, --manifest (repeated and comma-separated, alone or beside
// --suite) and the usage errors' exit status 64.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/subprocess.h"

namespace jitgemm::bench {
namespace {

using ::jitgemm::tools::testing::RunResult;
using ::jitgemm::tools::testing::RunTool;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kExitUsage = 64;

RunResult Bench(std::vector<std::string> args) {
  args.insert(args.begin(), JITGEMM_BENCH_PATH);
  return RunTool(args, {});
}

std::string Seed(const char* name) {
  return std::string(JITGEMM_MANIFEST_DIR) + "/" + name + ".json";
}

TEST(BenchCliTest, ListsTheNewRows) {
  const RunResult r = Bench({"--list", "--suite=S2,S6"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bf16 2048x2048x512 silu"));
  EXPECT_THAT(r.output, HasSubstr("f16 256x4096x1024 gelu_erf"));
  EXPECT_THAT(r.output, HasSubstr("cublas_mm,addmm_act,jit,auto"));
  EXPECT_THAT(r.output, HasSubstr("cublas_mm,addmm_act,lt_bias_act,jit,auto"));
  EXPECT_THAT(r.output, HasSubstr("bf16 M=512 N=14336 K=4096"));
  EXPECT_THAT(r.output, HasSubstr("f16 6144x6144x6144"));
}

// The MLP suite (issue 16): seed 001's grouped MLP and the dense blocks,
// their gated problems valid.
TEST(BenchCliTest, ListsTheMlpBlocks) {
  const RunResult r = Bench({"--list", "--suite=mlp"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("mlp  seed001 grouped 2560x12 1024-3072-1024"));
  EXPECT_THAT(r.output, HasSubstr("mlp  dense M=16 4096-14336-4096"));
  EXPECT_THAT(r.output, HasSubstr("mlp  dense M=2048 4096-14336-4096"));
  EXPECT_THAT(r.output, HasSubstr("gate=halves"));
  EXPECT_THAT(r.output, Not(HasSubstr("INVALID")));
}

TEST(BenchCliTest, ManifestsAloneRunNoDefaultSuite) {
  const RunResult r =
      Bench({"--list", "--manifest=" + Seed("seed003_small_m_linear"), "--manifest",
             Seed("seed001_grouped_linear") + "," + Seed("seed002_004_gemm_bias_relu")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("manifest:seed003_small_m_linear"));
  EXPECT_THAT(r.output, HasSubstr("manifest:seed001_grouped_linear"));
  EXPECT_THAT(r.output, HasSubstr("manifest:seed002_004_gemm_bias_relu"));
  EXPECT_THAT(r.output, Not(HasSubstr("S1 ")));
  EXPECT_THAT(r.output, Not(HasSubstr("S2 ")));
}

TEST(BenchCliTest, ManifestBesideANamedSuite) {
  const RunResult r =
      Bench({"--list", "--suite=S6", "--manifest=" + Seed("seed003_small_m_linear")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("S6  bf16 8192x8192x8192"));
  EXPECT_THAT(r.output, HasSubstr("manifest:seed003_small_m_linear"));
}

TEST(BenchCliTest, UsageErrorsExit64) {
  RunResult r = Bench({"--list", "--manifest=/nonexistent/m.json"});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_THAT(r.output, HasSubstr("--manifest: NOT_FOUND: /nonexistent/m.json"));
  r = Bench({"--list", "--impls=addmm_relu,nope"});  // the old name still parses
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_THAT(r.output, HasSubstr("unknown column 'nope'"));
  EXPECT_EQ(Bench({"--list", "--impls=addmm_act,lt_relu_bias"}).exit_code, 0);
}

TEST(BenchCliTest, HelpNamesTheManifestFlag) {
  const RunResult r = Bench({"--helpfull"});
  EXPECT_THAT(r.output, HasSubstr("-manifest"));
  EXPECT_THAT(r.output, HasSubstr("JITGEMM_RECORD"));
}

}  // namespace
}  // namespace jitgemm::bench
