// jitgemm-bench --manifest: the flag's values on the command line, the cases
// of a manifest (labels, columns, the manifest's options) and its errors. No GPU.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "tools/bench/manifest_cases.h"

namespace jitgemm::bench {
namespace {

using ::jitgemm::support::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ManifestFlagTest, CollectsRepeatedAndCommaSeparatedValues) {
  const char* argv[] = {"jitgemm-bench",    "--manifest=a.json,b.json",
                        "--suite=S2",       "-manifest",
                        "c.json",           "--manifest",
                        "d.json",           "--manifests=x",
                        "x.json",           "--",
                        "--manifest=e.json"};
  EXPECT_THAT(ManifestFlagValues(std::size(argv), argv),
              ElementsAre("a.json", "b.json", "c.json", "d.json"));
  const char* none[] = {"jitgemm-bench", "--suite=S2"};
  EXPECT_TRUE(ManifestFlagValues(std::size(none), none).empty());
  const char* dangling[] = {"jitgemm-bench", "--manifest"};  // Abseil reports it
  EXPECT_TRUE(ManifestFlagValues(std::size(dangling), dangling).empty());
}

TEST(ManifestFlagTest, FlagGivenMatchesTheWholeName) {
  const char* argv[] = {"jitgemm-bench", "--suites=S2", "-filter", "x", "--", "--suite=S1"};
  EXPECT_FALSE(FlagGiven(std::size(argv), argv, "suite"));
  EXPECT_TRUE(FlagGiven(std::size(argv), argv, "filter"));
  const char* given[] = {"jitgemm-bench", "--suite", "S2"};
  EXPECT_TRUE(FlagGiven(std::size(given), given, "suite"));
  const char* eq[] = {"jitgemm-bench", "-suite=S6"};
  EXPECT_TRUE(FlagGiven(std::size(eq), eq, "suite"));
}

constexpr char kManifest[] = R"({
  "version": 1,
  "options": {"tuning": "exhaustive", "pdl": false},
  "problems": [
    {"name": "mlp up", "m": 2048, "n": 512, "k": 2048, "dtype": "bf16", "b": {"layout": "col"},
     "epilogue": {"bias": "column", "activation": "silu"}},
    {"m": 64, "n": 128, "k": 256, "dtype": "f16",
     "epilogue": {"bias": "column", "activation": "gelu_tanh"}},
    {"m": 8, "n": 4096, "k": 4096, "dtype": "bf16", "b": {"layout": "col"}}
  ]
})";

TEST(ManifestCasesTest, OneCasePerProblemWithTheManifestsOptions) {
  absl::StatusOr<std::vector<BenchCase>> cases = ManifestTextCases(kManifest, "mine");
  ASSERT_TRUE(cases.ok()) << cases.status();
  ASSERT_EQ(cases->size(), 3u);
  const BenchCase& up = (*cases)[0];
  EXPECT_EQ(up.suite, "manifest:mine");
  EXPECT_EQ(up.label, "mlp up (bf16 r.c->r 2048x512x2048 bias_col silu)");
  EXPECT_EQ(up.problem.b.ld, 2048);  // canonical
  EXPECT_EQ(up.rotate, 1);
  EXPECT_THAT(up.impls, ElementsAre(Impl::kCublasMm, Impl::kAddmmAct, Impl::kJit, Impl::kAuto));
  ASSERT_TRUE(up.options.has_value());
  EXPECT_EQ(up.options->tuning, TuningPolicy::kExhaustive);
  EXPECT_FALSE(up.options->pdl);

  const BenchCase& gelu = (*cases)[1];
  EXPECT_EQ(gelu.label, "f16 r.r->r 64x128x256 bias_col gelu_tanh");
  EXPECT_THAT(gelu.impls, ElementsAre(Impl::kCublasMm, Impl::kAddmmAct, Impl::kLtBiasAct,
                                      Impl::kJit, Impl::kAuto));
  EXPECT_THAT((*cases)[2].impls, ElementsAre(Impl::kCublasMm, Impl::kJit, Impl::kAuto));
}

TEST(ManifestCasesTest, ErrorsNameTheProblemAndField) {
  EXPECT_THAT(ManifestTextCases(R"({"problems": [{"m": 1, "n": 1, "k": 1, "dtype": "f16"},
                                   {"name": "bad", "m": 0, "n": 1, "k": 1, "dtype": "f16"}]})",
                                "x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("problems[1] (bad): ")));
  EXPECT_THAT(ManifestTextCases(R"({"problems": [{"m": 1, "n": 1, "k": 1, "layuot": 1}]})", "x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("layuot")));
  EXPECT_THAT(ManifestFileCases("/nonexistent/recorded.json"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/recorded.json: ")));
}

TEST(ManifestCasesTest, EverySeedManifestLoads) {
  for (const char* seed : {"seed000_conv_batched", "seed001_grouped_linear",
                           "seed002_004_gemm_bias_relu", "seed003_small_m_linear"}) {
    const std::string path = std::string(JITGEMM_MANIFEST_DIR) + "/" + seed + ".json";
    absl::StatusOr<std::vector<BenchCase>> cases = ManifestFileCases(path);
    ASSERT_TRUE(cases.ok()) << cases.status();
    ASSERT_FALSE(cases->empty()) << seed;
    EXPECT_EQ(cases->front().suite, std::string("manifest:") + seed);
  }
}

// The bench's own manifests load; the unseen-shape one's gated rows get the
// gated columns (no Lt fused epilogue: Lt has no gate).
TEST(ManifestCasesTest, BenchManifestsLoadWithTheirColumns) {
  for (const char* name :
       {"suite_rows", "suite_rows_s2", "unseen_mix", "probe_c_residual", "probe_k_alignment",
        "probe_fp32_d", "probe_partial_wave", "probe_column_ring", "probe_sm80_two_byte_rows",
        "probe_gated_split", "probe_edge_chunks"}) {
    const std::string path = std::string(JITGEMM_BENCH_MANIFEST_DIR) + "/" + name + ".json";
    absl::StatusOr<std::vector<BenchCase>> cases = ManifestFileCases(path);
    ASSERT_TRUE(cases.ok()) << cases.status();
    ASSERT_FALSE(cases->empty()) << name;
  }
  absl::StatusOr<std::vector<BenchCase>> unseen =
      ManifestFileCases(std::string(JITGEMM_BENCH_MANIFEST_DIR) + "/unseen_mix.json");
  ASSERT_TRUE(unseen.ok()) << unseen.status();
  EXPECT_EQ(unseen->size(), 24u);
  int gated = 0;
  for (const BenchCase& c : *unseen) {
    if (c.problem.epilogue.gate == Gate::kNone) continue;
    ++gated;
    EXPECT_EQ(c.impls,
              (std::vector<Impl>{Impl::kCublasMm, Impl::kAddmmAct, Impl::kJit, Impl::kAuto}))
        << c.label;
  }
  EXPECT_GE(gated, 1);
}

}  // namespace
}  // namespace jitgemm::bench
