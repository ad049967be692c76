// ChooseFastest: the rule that picks a winner from timings, and the margin a
// JIT kernel must beat cuBLAS by in every regime.

#include "tune/selection.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tune/tuner_fixture.h"

namespace jitgemm::tune {
namespace {

using ::testing::HasSubstr;

TEST(ChooseFastestTest, JitMustBeatCublasByTheMargin) {
  std::vector<Timing> t = {
      {"jit-a", false, {9.6}}, {"jit-b", false, {9.8}}, {kCublasName, true, {10.0}}};
  t[0].us = {9.60};
  Choice c = ChooseFastest(t, 0.03);
  EXPECT_EQ(c.index, 0);
  EXPECT_THAT(c.reason, HasSubstr("beats cuBLAS"));
  t[0].us = {9.75};  // 2.5% faster: cuBLAS keeps it
  c = ChooseFastest(t, 0.03);
  EXPECT_EQ(c.index, 2);
  EXPECT_THAT(c.reason, HasSubstr("ties go to cuBLAS"));
  t[0].us = t[1].us = {10.0};  // an exact tie
  EXPECT_EQ(ChooseFastest(t, 0.0).index, 2);
}

TEST(ChooseFastestTest, LaterCublasSuggestionsMustBeatTheFirstByTheMargin) {
  std::vector<Timing> t = {{kCublasName, true, {38.16}}, {"cublas#1", true, {38.15}}};
  Choice c = ChooseFastest(t, 0.03);
  EXPECT_EQ(c.index, 0) << "a near-tie keeps cuBLASLt's first suggestion";
  t[1].us = {36.0};  // 5.7% faster
  EXPECT_EQ(ChooseFastest(t, 0.03).index, 1);
  // The first that ran is the reference when the first suggestion failed.
  t = {{kCublasName, true, {-1}}, {"cublas#1", true, {10.0}}, {"cublas#2", true, {9.9}}};
  EXPECT_EQ(ChooseFastest(t, 0.03).index, 1);
  // The JIT side is compared with the cuBLAS candidate kept.
  t = {{"jit", false, {9.5}}, {kCublasName, true, {10.0}}, {"cublas#1", true, {9.9}}};
  c = ChooseFastest(t, 0.03);
  EXPECT_EQ(c.index, 0);
  EXPECT_THAT(c.reason, HasSubstr("beats cuBLAS 10.00 us"));
}

TEST(ChooseFastestTest, MissingSidesAndFailures) {
  EXPECT_EQ(ChooseFastest({{"jit", false, {5}}, {kCublasName, true, {-1}}}, 0.03).index, 0);
  EXPECT_EQ(ChooseFastest({{"jit", false, {-1}}, {kCublasName, true, {7}}}, 0.03).index, 1);
  EXPECT_EQ(ChooseFastest({{"jit", false, {-1}}}, 0.03).index, -1);
  // Equal JIT times: the heuristics' first choice.
  EXPECT_EQ(ChooseFastest({{"a", false, {3}}, {"b", false, {3}}}, 0.03).index, 0);
}

TEST(ChooseFastestTest, JitMustBeatCublasByTheMarginInEveryRegime) {
  // 1 x 32768 x 512 bf16 as the issue saw it: the JIT kernel wins streaming
  // by 1.4x and loses resident (8.82 against 7.07 us).
  std::vector<Timing> t = {{"jit", false, {7.0, 8.82}}, {kCublasName, true, {9.8, 7.07}}};
  Choice c = ChooseFastest(t, 0.03, kBoth);
  EXPECT_EQ(c.index, 1);
  EXPECT_THAT(c.reason, HasSubstr("in every regime (streaming, resident)"));
  EXPECT_THAT(c.reason, HasSubstr("9.80 / 7.07 us (streaming / resident)"));
  t[0].us = {7.0, 6.80};  // 3.8% faster resident too: the JIT kernel wins
  c = ChooseFastest(t, 0.03, kBoth);
  EXPECT_EQ(c.index, 0);
  EXPECT_THAT(c.reason, HasSubstr("by 3.8%"));  // its worse regime
  // 1.7% faster resident: within the margin.
  t[0].us = {7.0, 6.95};
  EXPECT_EQ(ChooseFastest(t, 0.03, kBoth).index, 1);
}

TEST(ChooseFastestTest, TheWinnerHasTheBestWorseRegime) {
  // Against cuBLAS 10 / 10: a is 0.6 / 0.96, b 0.9 / 0.9; b's worse is better.
  std::vector<Timing> t = {
      {"a", false, {6.0, 9.6}}, {"b", false, {9.0, 9.0}}, {kCublasName, true, {10.0, 10.0}}};
  EXPECT_EQ(ChooseFastest(t, 0.03, kBoth).index, 1);
  // Without cuBLAS the fastest of each regime is the reference: a is 1 / 1.067,
  // b 1.5 / 1.
  t.pop_back();
  EXPECT_EQ(ChooseFastest(t, 0.03, kBoth).index, 0);
}

TEST(ChooseFastestTest, LaterCublasSuggestionsMustWinInEveryRegime) {
  // cublas#1 is 10% faster streaming and 2% slower resident: PyTorch's
  // algorithm (the first) stays, never slower than itself in either regime.
  std::vector<Timing> t = {{kCublasName, true, {10.0, 5.0}}, {"cublas#1", true, {9.0, 5.1}}};
  EXPECT_EQ(ChooseFastest(t, 0.03, kBoth).index, 0);
  t[1].us = {9.0, 4.8};
  EXPECT_EQ(ChooseFastest(t, 0.03, kBoth).index, 1);
}

TEST(ChooseFastestTest, ALaterCublasCandidateLevelInOneRegimeWinsByTheOther) {
  // Lt's fused GELU against its plain product + the pass (f16 16 x 8192 x 999):
  // level streaming (0.9% slower), 12% faster resident.
  std::vector<Timing> t = {{kCublasName, true, {19.24, 18.18}},
                           {"cublas+pass", true, {19.42, 16.0}},
                           {"jit", false, {19.44, 16.08}}};
  Choice c = ChooseFastest(t, 0.03, kBoth);
  EXPECT_EQ(c.index, 1);
  EXPECT_EQ(c.cublas, 1);
  t[1].us = {19.5, 16.0};  // 1.4% slower streaming: not level
  EXPECT_EQ(ChooseFastest(t, 0.03, kBoth).cublas, 0);
  t[1].us = {19.24, 17.9};  // level in both: near-ties stay with the first
  EXPECT_EQ(ChooseFastest(t, 0.03, kBoth).cublas, 0);
  // JIT kernels still beat the pick by the margin in every regime.
  t[1].us = {19.24, 18.18};
  t[2].us = {19.30, 14.0};
  EXPECT_EQ(ChooseFastest(t, 0.03, kBoth).index, 0);
}

TEST(ChooseFastestTest, PrunedOrPartlyTimedCandidatesCannotWin) {
  std::vector<Timing> t = {{"jit", false, {1.0}}, {kCublasName, true, {10.0, 10.0}}};
  EXPECT_EQ(ChooseFastest(t, 0.03, kBoth).index, 1) << "no resident time: could not run there";
  t[0].us = {1.0, 1.0};
  t[0].pruned = true;
  EXPECT_EQ(ChooseFastest(t, 0.03, kBoth).index, 1);
}

}  // namespace
}  // namespace jitgemm::tune
