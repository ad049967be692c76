// jitgemm-bench's report: the CSV (one consistent line per cell) and the
// table (times, speedups, failures, the two regimes' columns).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/bench/report.h"
#include "tools/bench/runner.h"
#include "tools/bench/suites.h"

namespace jitgemm::bench {
namespace {

using ::testing::HasSubstr;

TEST(ReportTest, CsvHasOneConsistentLinePerCell) {
  CaseResult r;
  r.bench_case = MakeSuite("S2")->front();
  CellResult mm;
  mm.impl = Impl::kCublasMm;
  mm.us = 2.5;
  mm.rel_err = 1e-4;
  mm.plan = "cublasLt plain, workspace 0 B";
  CellResult jit;
  jit.impl = Impl::kJit;
  jit.us = 2.0;
  jit.rel_err = 2e-4;
  jit.plan = "jit gemm_sm80_f16";
  jit.create_ms = 40;
  CellResult wrong;
  wrong.impl = Impl::kAuto;
  wrong.wrong = true;
  wrong.status = absl::InternalError("WRONG RESULT: x, \"y\"");
  r.cells = {mm, jit, wrong};
  CaseResult failed;
  failed.bench_case = MakeSuite("S6")->front();
  failed.status = absl::ResourceExhaustedError("no memory");

  const std::string csv = CsvText({r, failed});
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 5u);  // header, 3 cells, 1 failed case
  auto fields = [](const std::string& line) {
    int n = 1;
    bool quoted = false;
    for (char ch : line) {
      if (ch == '"') quoted = !quoted;
      if (ch == ',' && !quoted) ++n;
    }
    return n;
  };
  for (const std::string& line : lines) EXPECT_EQ(fields(line), fields(lines[0])) << line;
  EXPECT_THAT(lines[2], HasSubstr(",jit,ok,2.000,"));
  EXPECT_THAT(lines[0], HasSubstr(",us_per_call,us_min,us_max,us_streaming,us_resident,"));
  EXPECT_THAT(lines[0], HasSubstr(",speedup_vs_cublas_mm,speedup_vs_cublas_loop,"
                                  "speedup_vs_addmm_act,speedup_vs_lt_bias_act,plan,"));
  EXPECT_THAT(lines[2], HasSubstr(",1.2500,"));  // 2.5 / 2.0 vs cublas_mm
  EXPECT_THAT(lines[3], HasSubstr(",auto,wrong,"));
  EXPECT_THAT(lines[4], HasSubstr("setup_error"));
}

TEST(ReportTest, TableShowsTimesSpeedupsAndFailures) {
  CaseResult r;
  r.bench_case = MakeSuite("S2")->front();
  CellResult mm, addmm_act, relu_bias, jit, autoplan;
  mm.impl = Impl::kCublasMm;
  mm.us = 2.6;
  addmm_act.impl = Impl::kAddmmAct;
  addmm_act.us = 4.0;
  relu_bias.impl = Impl::kLtBiasAct;
  relu_bias.status = absl::UnimplementedError("no algorithm");
  jit.impl = Impl::kJit;
  jit.us = 2.0;
  autoplan.impl = Impl::kAuto;
  autoplan.wrong = true;
  autoplan.plan = "cublas cublasLt RELU_BIAS";
  autoplan.status = absl::InternalError("WRONG RESULT");
  r.cells = {mm, addmm_act, relu_bias, jit, autoplan};
  EXPECT_TRUE(IsNotApplicable(r.cells[2]));
  EXPECT_FALSE(IsFailure(r.cells[2]));
  EXPECT_TRUE(IsFailure(r.cells[4]));

  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  PrintTables({r}, f);
  std::rewind(f);
  std::string text;
  char buf[4096];
  for (size_t got; (got = std::fread(buf, 1, sizeof(buf), f)) > 0;) text.append(buf, got);
  std::fclose(f);
  EXPECT_THAT(text, HasSubstr("### S2"));
  EXPECT_THAT(text, HasSubstr("| f16 64x256x128 | 2.60 | 4.00 | n/a | 2.00 | **FAIL** |"));
  // jit vs cublas_mm, vs addmm_act, vs lt_bias_act
  EXPECT_THAT(text, HasSubstr("| 1.30x | 2.00x | - |"));
  EXPECT_THAT(text, HasSubstr("| cublas_mm µs | addmm_act µs | lt_bias_act µs | jit µs |"));
  EXPECT_THAT(text, HasSubstr("jit vs cublas_mm"));
  EXPECT_THAT(text, HasSubstr("jit vs addmm_act"));
  EXPECT_THAT(text, HasSubstr("cublas cublasLt RELU_BIAS |"));
  EXPECT_THAT(text, HasSubstr("S2 f16 64x256x128 auto: INTERNAL: WRONG RESULT"));
}

TEST(ReportTest, RegimeColumnsCompareAutoWithCublasInEachRegime) {
  CaseResult r;
  r.bench_case = MakeSuite("regimes")->front();
  r.streaming_copies = 4;
  CellResult mm, autoplan;
  mm.impl = Impl::kCublasMm;
  mm.us = 7.0;
  mm.us_streaming = 10.0;
  mm.us_resident = 7.0;
  autoplan.impl = Impl::kAuto;
  autoplan.us = 8.0;
  autoplan.us_streaming = 8.0;
  autoplan.us_resident = 8.75;
  autoplan.plan = "jit small_m";
  r.cells = {mm, autoplan};
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  PrintTables({r}, f);
  std::rewind(f);
  std::string text;
  char buf[4096];
  for (size_t got; (got = std::fread(buf, 1, sizeof(buf), f)) > 0;) text.append(buf, got);
  std::fclose(f);
  EXPECT_THAT(text, HasSubstr("| auto vs cublas_mm streaming | auto vs cublas_mm resident | auto "
                              "picked |"));
  EXPECT_THAT(text, HasSubstr("| 1.25x | 0.80x | jit small_m |"));
  const std::string csv = CsvText({r});
  EXPECT_THAT(csv, HasSubstr(",auto,ok,8.000,"));
  EXPECT_THAT(csv, HasSubstr(",8.000,8.750,"));
}

}  // namespace
}  // namespace jitgemm::bench
