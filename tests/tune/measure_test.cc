// The budget of choosing: graph sizes and replays scale with a candidate's
// time, and the whole choice is capped.

#include "tune/measure.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tune/tuner_fixture.h"
#include "tune/rematch.h"

namespace jitgemm::tune {
namespace {

using ::testing::HasSubstr;

// The budget: launches scale with a candidate's time, a candidate clearly
// behind stops after one replay, and the total is bounded.
TEST_F(TunerTest, TimingCostScalesWithTheCandidatesTime) {
  // An 11 ms GEMM (4096 x 129280 x 7168 bf16 on an H100): 8 JIT kernels, the
  // last four twice as slow as the best, and 3 cuBLAS algorithms.
  std::vector<Candidate> jit;
  for (int i = 0; i < 8; ++i) {
    jit.push_back(Config(jit::Family::kSm90, 64 + 16 * i));
    us_[Name(jit.back())] = i < 4 ? 11300 + 100 * i : 22000;
  }
  us_[kCublasName] = 11500;
  us_["cublas#1"] = 11600;
  us_["cublas#2"] = 30000;
  TuneRequest r = Request();
  r.candidates = Set(jit, 3);
  auto result = SelectBackend(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Name(result->winner), kCublasName) << "11.3 ms is not 3% below 11.5";
  for (const auto& [name, sizes] : clock_.launches_of) {
    for (int size : sizes) EXPECT_EQ(size, 1) << name << ": one call per graph";
  }
  // Full: warm-up, timed call, untimed replay, kMinReplays replays; then, as
  // a close call, kRematchRounds more of warm-up, timed call and two replays
  // for the best JIT kernel and the two nearest behind it.
  for (int i : {0, 1, 2}) {
    EXPECT_EQ(clock_.calls_of[Name(jit[i])], 3 + kMinReplays + 4 * kRematchRounds) << i;
  }
  EXPECT_EQ(clock_.calls_of[Name(jit[3])], 3 + kMinReplays) << "the third behind: no second look";
  EXPECT_EQ(clock_.calls_of[Name(jit[7])], 4) << "twice as slow: stopped after one replay";
  EXPECT_EQ(clock_.calls_of["cublas#2"], 4);
  // 6 calls for 6 candidates, 4 for the other 5, 8 more for each of the four
  // that are timed again: 88 calls, 1.25 s of GPU time.
  EXPECT_EQ(clock_.calls.load(), 6 * 6 + 5 * 4 + 4 * 4 * kRematchRounds);
  EXPECT_LT(clock_.gpu_us, 1.3e6);
  EXPECT_THAT(result->reason, HasSubstr("5 stopped early"));
  EXPECT_NEAR(result->timing_us, clock_.gpu_us, 1.0);
}

TEST_F(TunerTest, MidSizedCandidatesGetGraphsOfAFewMilliseconds) {
  us_ = {{Name(kA), 1500}, {Name(kB), 1500}, {Name(kC), 1500}, {kCublasName, 1500}};
  auto result = SelectBackend(Request());
  ASSERT_TRUE(result.ok());
  // 8192^3 bf16 (1.5 ms): 2 launches per graph, 5 replays; all level, so
  // cuBLAS and the first JIT kernel get kRematchRounds second looks (one
  // replay each).
  ASSERT_FALSE(clock_.launches_of[kCublasName].empty());
  EXPECT_EQ(clock_.launches_of[kCublasName].front(), 2);
  EXPECT_EQ(clock_.calls_of[kCublasName], 2 + 2 + 5 * 2 + kRematchRounds * (2 + 2 + 2));
}

TEST_F(TunerTest, TheTotalBudgetCapsManyLongCandidates) {
  // Exhaustive tuning of a 20 ms problem: 40 equal candidates.
  std::vector<Candidate> jit;
  for (int i = 0; i < 40; ++i) {
    jit.push_back(Config(jit::Family::kSm90, 8 + 8 * i));
    us_[Name(jit.back())] = 20000;
  }
  us_[kCublasName] = 20000;
  TuneRequest r = Request(TuningPolicy::kExhaustive);
  r.candidates = Set(jit, 1);
  ASSERT_TRUE(SelectBackend(r).ok());
  // All level: the first three JIT kernels and cuBLAS also get their second
  // looks.
  EXPECT_EQ(clock_.calls_of[Name(jit[0])], 6 + 4 * kRematchRounds);
  EXPECT_EQ(clock_.calls_of[Name(jit[2])], 6 + 4 * kRematchRounds);
  EXPECT_EQ(clock_.calls_of[Name(jit[3])], 6);
  EXPECT_EQ(clock_.calls_of[Name(jit[39])], 4) << "past the total budget: one replay";
  EXPECT_LT(clock_.gpu_us, kTotalBudgetUs + (41 * 4 + 4 * 4 * kRematchRounds) * 20000.0);
}

}  // namespace
}  // namespace jitgemm::tune
