// Close calls: which candidates are timed again, alternately, when the first
// timings leave the winner within the window around the margin.

#include "tune/rematch.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tune/tuner_fixture.h"

namespace jitgemm::tune {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The reference is timed first; if the card was faster then, a JIT kernel
// level with it may really be ahead. Close calls are timed again alternately.
TEST_F(TunerTest, CloseCallsAreTimedAgainAlternately) {
  us_[Name(kA)] = 2.6;                 // level with cuBLAS's first measurement
  clock_.later_us[kCublasName] = 2.9;  // cuBLAS measured again, on the warm card
  auto r = SelectBackend(Request());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->winner, kA);
  EXPECT_THAT(r->reason, HasSubstr("close call timed again"));
  EXPECT_EQ(clock_.measured[Name(kA)], 1 + kRematchRounds);
  EXPECT_EQ(clock_.measured[kCublasName], 1 + kRematchRounds);
  EXPECT_EQ(clock_.measured[Name(kB)], 1);
}

// The card's warm-up can make one regime's look 16% off, here the
// reference's resident one, so that the JIT kernel looks 17% behind there:
// still a close call, and timed again the JIT kernel wins.
TEST_F(TunerTest, AReferenceFlatteredInOneRegimeIsTimedAgain) {
  us_[Name(kA)] = 2.45;  // 6% ahead of cuBLAS streaming
  us_[Name(kA) + "@resident"] = 2.45;
  us_[kCublasName + std::string("@resident")] = 2.1;  // its first resident look
  clock_.later_us[kCublasName] = 2.6;                 // every later look, warm card
  clock_.looks_before_drift = 2;                      // both regimes of the first pass
  TuneRequest r = Request();
  r.l2_bytes = 50 << 20;
  r.reused_bytes = 34 << 20;
  auto result = SelectBackend(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->winner, kA) << result->reason;
  EXPECT_THAT(result->reason, HasSubstr("close call timed again"));
}

// The drift that flatters whatever runs first can also put the wrong JIT
// kernel ahead of the others: those close behind it are timed again too.
TEST_F(TunerTest, CloseCallsTimeTheJitKernelsCloseBehindAgain) {
  us_[Name(kA)] = 2.45;             // 6% ahead of cuBLAS on its first look
  clock_.later_us[Name(kA)] = 2.7;  // and behind it after that
  us_[Name(kB)] = 2.5;              // 2% behind kA on the first look
  clock_.later_us[Name(kB)] = 2.45;
  auto r = SelectBackend(Request());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Name(r->winner), Name(kB)) << r->reason;
  EXPECT_THAT(r->reason, HasSubstr("close call timed again"));
  EXPECT_EQ(clock_.measured[Name(kA)], 1 + kRematchRounds);
  EXPECT_EQ(clock_.measured[Name(kB)], 1 + kRematchRounds);
  EXPECT_EQ(clock_.measured[Name(kC)], 1) << "9 us: far behind";
}

TEST(RematchTest, RunnersUpAreTheNearestJitKernelsInEveryRegime) {
  auto timing = [](const char* name, std::vector<double> us, bool cublas = false) {
    Timing t;
    t.name = name;
    t.us = std::move(us);
    t.is_cublas = cublas;
    return t;
  };
  std::vector<Timing> timings = {
      timing("cublas", {10.0, 10.0}, true),
      timing("best", {9.0, 9.0}),
      timing("near", {9.2, 9.3}),
      timing("nearer", {9.1, 9.1}),
      timing("far", {9.6, 9.0}),
      timing("nearest", {9.0, 9.05}),
  };
  timings.push_back(timing("stopped", {9.0, 9.0}));
  timings.back().pruned = true;
  Choice c;
  c.cublas = 0;
  c.best_jit = 1;
  // "near" and "far" (6.7% behind streaming) are past kRematchRunnersUp.
  EXPECT_EQ(RunnersUp(timings, c), (std::vector<int>{5, 3}));
  c.best_jit = -1;
  EXPECT_TRUE(RunnersUp(timings, c).empty());

  // The window: 9.4% behind is a runner-up, 11.1% is not.
  timings = {timing("cublas", {10.0}, true), timing("best", {9.0}), timing("in", {9.85}),
             timing("out", {10.0})};
  c.best_jit = 1;
  EXPECT_EQ(RunnersUp(timings, c), (std::vector<int>{2}));
}

// A JIT kernel timed early, on the cooler card, can look ahead of one that
// runs faster under load. Where a JIT kernel wins clearly, those close behind
// it are timed again with it, and the cuBLAS pick too.
TEST_F(TunerTest, ClearWinsTimeTheJitKernelsCloseBehindAgain) {
  clock_.later_us[Name(kA)] = 2.3;  // 2.0 on its first look, 23% ahead of cuBLAS
  us_[Name(kB)] = 2.15;             // 7.5% behind kA on its first look
  clock_.later_us[Name(kB)] = 2.1;
  auto r = SelectBackend(Request());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Name(r->winner), Name(kB)) << r->reason;
  EXPECT_THAT(r->reason, HasSubstr("JIT kernels close behind timed again"));
  EXPECT_EQ(clock_.measured[Name(kA)], 1 + kRematchRounds);
  EXPECT_EQ(clock_.measured[Name(kB)], 1 + kRematchRounds);
  EXPECT_EQ(clock_.measured[kCublasName], 1 + kRematchRounds);
  EXPECT_EQ(clock_.measured[Name(kC)], 1) << "9 us: far behind";
}

// Second looks run on a warmer card: had only the JIT kernels been timed
// again, their medians (2.5) would have been weighed against cuBLAS's first
// look (2.6) and lost by the margin.
TEST_F(TunerTest, ASecondLookIsNeverWeighedAgainstAFirstLook) {
  clock_.later_us[Name(kA)] = 2.5;
  us_[Name(kB)] = 2.15;
  clock_.later_us[Name(kB)] = 2.6;
  clock_.later_us[kCublasName] = 3.1;
  auto r = SelectBackend(Request());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Name(r->winner), Name(kA)) << r->reason;
  EXPECT_THAT(r->reason, HasSubstr("timed again"));
}

TEST_F(TunerTest, ClearDecisionsAreNotTimedAgain) {
  clock_.later_us[kCublasName] = 1.0;  // would flip the choice if measured again
  auto r = SelectBackend(Request());   // kA 2.0 against cuBLAS 2.6: 23% ahead
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->winner, kA);
  EXPECT_THAT(r->reason, Not(HasSubstr("timed again")));
  EXPECT_EQ(clock_.measured[kCublasName], 1);
}

TEST(RematchTest, TheWindowSurroundsTheMargin) {
  Choice c;
  c.cublas = 0;
  c.best_jit = 1;
  for (const auto& [ratio, close] :
       {std::pair{0.90, false}, std::pair{0.93, true}, std::pair{0.97, true}, std::pair{1.04, true},
        std::pair{1.06, true}, std::pair{1.16, true}, std::pair{1.24, true},
        std::pair{1.26, false}}) {
    c.jit_ratio = ratio;
    EXPECT_EQ(IsCloseCall(c, 0.03), close) << ratio;
  }
  c.cublas = -1;
  c.jit_ratio = 1.0;
  EXPECT_FALSE(IsCloseCall(c, 0.03));  // nothing to compare with
}

}  // namespace
}  // namespace jitgemm::tune
