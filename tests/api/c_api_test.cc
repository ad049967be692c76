// The C ABI's functions that need no GPU: options, plan creation errors, the
// manifest round trip and cache statistics. Plans on a GPU: tests/gpu.
#include "jitgemm/c_api.h"

#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

using ::testing::HasSubstr;

class CApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("jitgemm_c_api_test." + std::to_string(::getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    unsetenv("JITGEMM_TUNING");
    unsetenv("JITGEMM_JIT");
    unsetenv("JITGEMM_REGIME");
  }
  std::filesystem::path dir_;
};

// The regime took the padding before win_margin: callers built against an
// earlier header pass a struct of the same size and offsets.
TEST(CApiLayoutTest, OptionsKeepTheirSizeAndOffsets) {
  EXPECT_EQ(sizeof(jitgemm_options_t), 40u);
  EXPECT_EQ(offsetof(jitgemm_options_t, pointer_alignment), 24u);
  EXPECT_EQ(offsetof(jitgemm_options_t, regime), 28u);
  EXPECT_EQ(offsetof(jitgemm_options_t, win_margin), 32u);
}

TEST_F(CApiTest, OptionsInitAppliesTheEnvironment) {
  jitgemm_options_t o;
  jitgemm_options_init(&o);
  EXPECT_EQ(o.tuning, 1);  // fast
  EXPECT_EQ(o.jit_enabled, 1);
  EXPECT_EQ(o.pointer_alignment, 16);
  setenv("JITGEMM_TUNING", "heuristic", 1);
  setenv("JITGEMM_JIT", "off", 1);
  jitgemm_options_init(&o);
  EXPECT_EQ(o.tuning, 0);
  EXPECT_EQ(o.jit_enabled, 0);
  jitgemm_options_init(nullptr);  // no crash
  EXPECT_EQ(o.regime, 0);         // auto
  setenv("JITGEMM_REGIME", "resident", 1);
  jitgemm_options_init(&o);
  EXPECT_EQ(o.regime, 2);
}

TEST_F(CApiTest, CreateWithOptionsRejectsBadOptionsBeforeAnyDevice) {
  jitgemm_problem_t p;
  jitgemm_problem_init(&p, 8, 16, 32, /*bf16=*/2);
  jitgemm_options_t o;
  jitgemm_options_init(&o);
  o.pointer_alignment = 3;
  jitgemm_plan_t plan = reinterpret_cast<jitgemm_plan_t>(&o);
  EXPECT_EQ(jitgemm_plan_create_with_options(&p, &o, &plan), JITGEMM_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  EXPECT_THAT(jitgemm_last_error(), HasSubstr("pointer_alignment"));

  jitgemm_options_init(&o);
  o.tuning = 7;
  EXPECT_EQ(jitgemm_plan_create_with_options(&p, &o, &plan), JITGEMM_INVALID_ARGUMENT);
  EXPECT_THAT(jitgemm_last_error(), HasSubstr("options.tuning"));
  jitgemm_options_init(&o);
  o.backend = -1;
  EXPECT_EQ(jitgemm_plan_create_with_options(&p, &o, &plan), JITGEMM_INVALID_ARGUMENT);
  EXPECT_THAT(jitgemm_last_error(), HasSubstr("options.backend"));
  jitgemm_options_init(&o);
  o.regime = 3;
  EXPECT_EQ(jitgemm_plan_create_with_options(&p, &o, &plan), JITGEMM_INVALID_ARGUMENT);
  EXPECT_THAT(jitgemm_last_error(), HasSubstr("options.regime"));

  jitgemm_options_init(&o);
  p.a.ld = 4;  // smaller than the row of K = 32
  EXPECT_EQ(jitgemm_plan_create_with_options(&p, &o, &plan), JITGEMM_INVALID_ARGUMENT);
  EXPECT_THAT(jitgemm_last_error(), HasSubstr("lda"));
  EXPECT_EQ(jitgemm_plan_create_with_options(nullptr, &o, &plan), JITGEMM_INVALID_ARGUMENT);
  EXPECT_THAT(jitgemm_last_error(), HasSubstr("problem"));
}

TEST_F(CApiTest, ManifestAddThenReadRoundTrips) {
  const std::string path = (dir_ / "recorded.json").string();
  jitgemm_problem_t grouped;
  jitgemm_problem_init(&grouped, 2560, 3072, 1024, /*bf16=*/2);
  grouped.batch_count = 12;
  grouped.a = {2, 0, 12 * 1024, 1024};
  grouped.b = {2, 1, 1024, 1024 * 3072};
  grouped.d = {2, 0, 12 * 3072, 3072};
  grouped.bias_mode = 1;
  grouped.activation = 1;
  jitgemm_problem_t small;
  jitgemm_problem_init(&small, 1, 2048, 4096, 2);
  ASSERT_EQ(jitgemm_manifest_add(path.c_str(), &grouped, nullptr), JITGEMM_OK)
      << jitgemm_last_error();
  ASSERT_EQ(jitgemm_manifest_add(path.c_str(), &small, nullptr), JITGEMM_OK);
  ASSERT_EQ(jitgemm_manifest_add(path.c_str(), &grouped, nullptr), JITGEMM_OK);  // not twice

  int64_t count = -1;
  EXPECT_EQ(jitgemm_manifest_read(path.c_str(), nullptr, 0, &count), JITGEMM_OK);
  EXPECT_EQ(count, 2);
  std::vector<jitgemm_problem_t> read(1);
  EXPECT_EQ(jitgemm_manifest_read(path.c_str(), read.data(), 1, &count), JITGEMM_OK);
  EXPECT_EQ(count, 2) << "the count says how many are listed, past the capacity";
  EXPECT_EQ(read[0].m, 2560);
  EXPECT_EQ(read[0].batch_count, 12);
  EXPECT_EQ(read[0].a.ld, 12 * 1024);
  EXPECT_EQ(read[0].b.layout, 1);
  EXPECT_EQ(read[0].b.batch_stride, 1024 * 3072);
  EXPECT_EQ(read[0].d.batch_stride, 3072);
  EXPECT_EQ(read[0].bias_mode, 1);
  EXPECT_EQ(read[0].activation, 1);
  EXPECT_EQ(read[0].gate, 0);
}

// The regime is an option like any other: a plan made with it reads its own
// tuning decision, so a manifest keeps it, and one problem recorded with two
// regimes is two entries. Options a manifest could not be read back with are
// refused and nothing is written.
TEST_F(CApiTest, ManifestAddKeepsTheOptionsAndRefusesBadOnes) {
  const std::string path = (dir_ / "regimes.json").string();
  jitgemm_problem_t p;
  jitgemm_problem_init(&p, 8, 4096, 4096, /*bf16=*/2);
  p.b.layout = 1;
  jitgemm_options_t o;
  jitgemm_options_init(&o);
  o.regime = 2;  // resident
  ASSERT_EQ(jitgemm_manifest_add(path.c_str(), &p, &o), JITGEMM_OK) << jitgemm_last_error();
  o.regime = 1;  // streaming
  ASSERT_EQ(jitgemm_manifest_add(path.c_str(), &p, &o), JITGEMM_OK) << jitgemm_last_error();
  ASSERT_EQ(jitgemm_manifest_add(path.c_str(), &p, &o), JITGEMM_OK) << jitgemm_last_error();
  int64_t count = -1;
  EXPECT_EQ(jitgemm_manifest_read(path.c_str(), nullptr, 0, &count), JITGEMM_OK);
  EXPECT_EQ(count, 2);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("\"regime\": \"resident\""));
  EXPECT_THAT(text, HasSubstr("\"regime\": \"streaming\""));

  const std::string bad = (dir_ / "bad.json").string();
  for (auto [field, value] :
       {std::pair{"pointer_alignment", 3}, std::pair{"regime", 5}, std::pair{"tuning", 9}}) {
    jitgemm_options_init(&o);
    if (std::string(field) == "pointer_alignment") o.pointer_alignment = value;
    if (std::string(field) == "regime") o.regime = value;
    if (std::string(field) == "tuning") o.tuning = value;
    EXPECT_EQ(jitgemm_manifest_add(bad.c_str(), &p, &o), JITGEMM_INVALID_ARGUMENT) << field;
    EXPECT_THAT(jitgemm_last_error(), HasSubstr(std::string("options.") + field));
    EXPECT_FALSE(std::filesystem::exists(bad)) << field;
  }
  jitgemm_options_init(&o);
  o.win_margin = 1.5;
  EXPECT_EQ(jitgemm_manifest_add(bad.c_str(), &p, &o), JITGEMM_INVALID_ARGUMENT);
  EXPECT_THAT(jitgemm_last_error(), HasSubstr("options.win_margin"));
}

TEST_F(CApiTest, GatedProblemsRoundTripAndAreValidated) {
  const std::string path = (dir_ / "gated.json").string();
  jitgemm_problem_t gated;
  jitgemm_problem_init(&gated, 16, 14336, 4096, /*bf16=*/2);
  EXPECT_EQ(gated.gate, 0);
  gated.b.layout = 1;
  gated.activation = 4;
  gated.gate = 1;
  ASSERT_EQ(jitgemm_manifest_add(path.c_str(), &gated, nullptr), JITGEMM_OK)
      << jitgemm_last_error();
  std::vector<jitgemm_problem_t> read(1);
  int64_t count = -1;
  ASSERT_EQ(jitgemm_manifest_read(path.c_str(), read.data(), 1, &count), JITGEMM_OK);
  EXPECT_EQ(read[0].gate, 1);
  EXPECT_EQ(read[0].b.layout, 1);
  EXPECT_EQ(read[0].activation, 4);
  gated.gate = 7;
  jitgemm_plan_t plan = nullptr;
  EXPECT_EQ(jitgemm_plan_create(&gated, &plan), JITGEMM_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(jitgemm_last_error()), HasSubstr("epilogue.gate"));
  EXPECT_EQ(plan, nullptr);
}

TEST_F(CApiTest, ManifestErrorsNameThePathAndField) {
  int64_t count = 0;
  const std::string missing = (dir_ / "absent.json").string();
  EXPECT_EQ(jitgemm_manifest_read(missing.c_str(), nullptr, 0, &count), JITGEMM_NOT_FOUND);
  EXPECT_THAT(jitgemm_last_error(), HasSubstr("absent.json"));

  const std::string bad = (dir_ / "bad.json").string();
  std::ofstream(bad) << R"({"problems": [{"m": "eight"}]})";
  EXPECT_EQ(jitgemm_manifest_read(bad.c_str(), nullptr, 0, &count), JITGEMM_INVALID_ARGUMENT);
  EXPECT_THAT(jitgemm_last_error(), HasSubstr("bad.json"));
  EXPECT_THAT(jitgemm_last_error(), HasSubstr("m"));

  jitgemm_problem_t p;
  jitgemm_problem_init(&p, 0, 16, 16, 0);
  EXPECT_EQ(jitgemm_manifest_add((dir_ / "x.json").c_str(), &p, nullptr), JITGEMM_INVALID_ARGUMENT);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "x.json")) << "an invalid problem is not recorded";
  EXPECT_EQ(jitgemm_manifest_read(bad.c_str(), nullptr, 0, nullptr), JITGEMM_INVALID_ARGUMENT);
  EXPECT_THAT(jitgemm_last_error(), HasSubstr("count"));
}

TEST_F(CApiTest, CacheStatsReportTheRootAndMode) {
  // Run first in this process (ctest runs each test alone), so the
  // process-wide cache opens on this root.
  setenv("JITGEMM_CACHE_DIR", dir_.c_str(), 1);
  jitgemm_cache_stats_t s;
  ASSERT_EQ(jitgemm_cache_stats(&s), JITGEMM_OK) << jitgemm_last_error();
  if (std::string(s.root) != dir_.string()) {
    GTEST_SKIP() << "the process-wide cache was opened earlier on " << s.root;
  }
  EXPECT_STREQ(s.mode, "readwrite");
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(s.compiles, 0u);
  EXPECT_EQ(jitgemm_cache_stats(nullptr), JITGEMM_INVALID_ARGUMENT);
  EXPECT_THAT(jitgemm_last_error(), HasSubstr("stats"));
}

}  // namespace
