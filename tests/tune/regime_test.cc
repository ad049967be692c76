// Which regimes a problem is timed in (weights streamed, or resident in the
// L2), and the tuner timing, storing and re-reading decisions per regime.

#include "tune/regime.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tune/tuner_fixture.h"

namespace jitgemm::tune {
namespace {

using ::testing::HasSubstr;

TEST(RegimeTest, BothRegimesOnlyWhereTheWeightFitsInTheL2) {
  const int64_t l2 = 50 << 20;
  using V = std::vector<Regime>;
  EXPECT_EQ(RegimesToTime(TimingRegime::kAuto, 34 << 20, l2),
            (V{Regime::kStreaming, Regime::kResident}));
  EXPECT_EQ(RegimesToTime(TimingRegime::kAuto, int64_t{1850} << 20, l2), V{Regime::kStreaming});
  EXPECT_EQ(RegimesToTime(TimingRegime::kAuto, 1 << 20, 0), V{Regime::kStreaming})
      << "unknown L2: as before regimes";
  EXPECT_EQ(RegimesToTime(TimingRegime::kResident, int64_t{1850} << 20, l2), V{Regime::kResident});
  EXPECT_EQ(RegimesToTime(TimingRegime::kStreaming, 1 << 20, l2), V{Regime::kStreaming});
  EXPECT_EQ(RegimeNames({Regime::kStreaming, Regime::kResident}), kBoth);
  GemmProblem p;
  p.m = 1;
  p.n = 32768;
  p.k = 512;
  p.a = {DataType::kBF16, Layout::kRowMajor, 512, kNoStride};
  p.b = {DataType::kBF16, Layout::kColMajor, 512, kNoStride};
  EXPECT_EQ(ReusedBytes(p), int64_t{32768} * 512 * 2);
}

// A weight that fits in the L2 but is a sliver of what a call moves, where
// the call is far larger than the L2, is timed streaming only.
TEST(RegimeTest, AMinorWeightOfALargeCallIsTimedStreamingOnly) {
  const int64_t l2 = 50 << 20;
  using V = std::vector<Regime>;
  const V both = {Regime::kStreaming, Regime::kResident};
  // 6 MB of 258 MB (30720 x 3072 x 1024 bf16): 2.4%.
  EXPECT_EQ(RegimesToTime(TimingRegime::kAuto, 6 << 20, l2, 258 << 20), V{Regime::kStreaming});
  // 17 MB of 168 MB (8192 x 8192 x 1024): 10%.
  EXPECT_EQ(RegimesToTime(TimingRegime::kAuto, 17 << 20, l2, 168 << 20), both);
  // 2.4% of a call within two L2s: what stays in the L2 is more than the weight.
  EXPECT_EQ(RegimesToTime(TimingRegime::kAuto, 2 << 20, l2, 84 << 20), both);
  EXPECT_EQ(RegimesToTime(TimingRegime::kAuto, 6 << 20, l2, 0), both) << "unknown call bytes";
  EXPECT_EQ(RegimesToTime(TimingRegime::kResident, 6 << 20, l2, 258 << 20), V{Regime::kResident})
      << "declared";
}

TEST(RegimeTest, CallBytesCountElementsNotSpans) {
  GemmProblem p;  // seed 001's grouped linear: A and D strided, 12 groups
  p.m = 2560;
  p.n = 3072;
  p.k = 1024;
  p.batch_count = 12;
  p.a = {DataType::kBF16, Layout::kRowMajor, 12288, 1024};
  p.b = {DataType::kBF16, Layout::kRowMajor, 3072, 3072 * 1024};
  p.c = {DataType::kBF16, Layout::kRowMajor, 36864, 3072};
  p.d = {DataType::kF32, Layout::kRowMajor, 36864, 3072};
  const int64_t a = int64_t{2560} * 1024 * 12 * 2, b = int64_t{1024} * 3072 * 12 * 2;
  const int64_t d = int64_t{2560} * 3072 * 12 * 4, c = int64_t{2560} * 3072 * 12 * 2;
  EXPECT_EQ(CallBytes(p), a + b + d);
  p.epilogue.beta = 1.0f;
  EXPECT_EQ(CallBytes(p), a + b + c + d) << "C read";
  p.a.batch_stride = 0;
  p.c.batch_stride = 0;
  EXPECT_EQ(CallBytes(p), a / 12 + b + c / 12 + d) << "A and C broadcast";
}

TEST_F(TunerTest, BothRegimesAreTimedWhereTheWeightFitsInTheL2) {
  // The JIT kernel wins streaming (2.0 against 2.6) and loses resident.
  us_[Name(kA) + "@resident"] = 2.0;
  us_[kCublasName + std::string("@resident")] = 1.5;
  TuneRequest r = Request();
  r.l2_bytes = 50 << 20;
  r.reused_bytes = 34 << 20;
  auto result = SelectBackend(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Name(result->winner), kCublasName);
  EXPECT_EQ(result->regimes, kBoth);
  EXPECT_THAT(result->reason, HasSubstr("streaming+resident"));
  EXPECT_TRUE(clock_.resident_seen.count(kCublasName));
  EXPECT_TRUE(clock_.resident_seen.count(Name(kA)));
  ASSERT_FALSE(result->resident_us.empty());
  EXPECT_EQ(result->resident_us[0], (std::pair<std::string, double>(Name(kA), 2.0)));
  EXPECT_GT(result->timing_us, 0);
  // The record says which regimes decided; a new process reads the same.
  auto again = SelectBackend(r);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->from_record);
  EXPECT_EQ(again->regimes, kBoth);
  EXPECT_EQ(again->resident_us, result->resident_us);
}

TEST_F(TunerTest, AWeightLargerThanTheL2IsTimedStreamingOnly) {
  us_[Name(kA) + "@resident"] = 2.0;
  us_[kCublasName + std::string("@resident")] = 1.5;
  TuneRequest r = Request();
  r.l2_bytes = 50 << 20;
  r.reused_bytes = 60 << 20;
  auto result = SelectBackend(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Name(result->winner), Name(kA));
  EXPECT_EQ(result->regimes, std::vector<std::string>{"streaming"});
  EXPECT_TRUE(clock_.resident_seen.empty());
  EXPECT_TRUE(result->resident_us.empty());
}

TEST_F(TunerTest, ADeclaredRegimeIsTheOnlyOneTimed) {
  us_[Name(kA) + "@resident"] = 2.0;
  us_[kCublasName + std::string("@resident")] = 1.5;
  TuneRequest r = Request();
  r.l2_bytes = 50 << 20;
  r.reused_bytes = 60 << 20;  // does not fit, but the caller knows better
  r.regime = TimingRegime::kResident;
  auto result = SelectBackend(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Name(result->winner), kCublasName);
  EXPECT_EQ(result->regimes, std::vector<std::string>{"resident"});
  EXPECT_EQ(result->candidate_us[0].second, 2.0) << "the times are the resident ones";
}

TEST_F(TunerTest, ARecordDecidedInFewerRegimesIsRetunedWhenTimingIsPossible) {
  us_[Name(kA) + "@resident"] = 2.0;
  us_[kCublasName + std::string("@resident")] = 1.5;
  TuneRequest streaming_only = Request();  // no L2 size: as before regimes
  auto first = SelectBackend(streaming_only);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(Name(first->winner), Name(kA));
  const int timed = timings_.load();

  TuneRequest both = Request();
  both.l2_bytes = 50 << 20;
  both.reused_bytes = 34 << 20;
  // Without timing (capture), the old decision is still the best known.
  TuneRequest cap = both;
  cap.capturing = true;
  auto during_capture = SelectBackend(cap);
  ASSERT_TRUE(during_capture.ok());
  EXPECT_TRUE(during_capture->from_record);
  EXPECT_EQ(Name(during_capture->winner), Name(kA));
  EXPECT_EQ(timings_.load(), timed);

  auto retuned = SelectBackend(both);
  ASSERT_TRUE(retuned.ok());
  EXPECT_FALSE(retuned->from_record);
  EXPECT_EQ(Name(retuned->winner), kCublasName);
  EXPECT_GT(timings_.load(), timed);
  auto stored = SelectBackend(both);
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(stored->from_record) << "the replacement was stored";
  EXPECT_EQ(stored->regimes, kBoth);
}

TEST_F(TunerTest, ARecordDecidedInMoreRegimesThanNeededHolds) {
  TuneRequest both = Request();
  both.l2_bytes = 50 << 20;
  both.reused_bytes = 6 << 20;
  auto first = SelectBackend(both);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->regimes, kBoth);
  const int timed = timings_.load();
  TuneRequest minor = both;
  minor.call_bytes = 258 << 20;
  auto stored = SelectBackend(minor);
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(stored->from_record);
  EXPECT_EQ(timings_.load(), timed);
}

TEST_F(TunerTest, CublasFirstChoiceIsAlwaysFullyTimedInEveryRegime) {
  // Even far behind the JIT kernels it is measured in full, in both regimes:
  // it is the reference.
  us_[kCublasName] = 9.0;
  us_[kCublasName + std::string("@resident")] = 9.0;
  TuneRequest r = Request();
  r.candidates = Set({kA, kB, kC}, 3);
  us_["cublas#1"] = 9.0;
  us_["cublas#2"] = 9.0;
  r.l2_bytes = 50 << 20;
  r.reused_bytes = 1 << 20;
  auto result = SelectBackend(r);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(Name(result->winner), Name(kA));
  EXPECT_TRUE(clock_.resident_seen.count(kCublasName));
  // 2 calls, a 40-launch untimed replay and 5 timed replays, per regime.
  EXPECT_EQ(clock_.calls_of[kCublasName], 2 * (2 + 40 + 5 * 40));
  // cublas#1 (9.0 against kA's 2.0) stops after its first replay.
  EXPECT_EQ(clock_.calls_of["cublas#1"], 2 + 40 + 40);
  EXPECT_FALSE(clock_.resident_seen.count("cublas#1"));
}

}  // namespace
}  // namespace jitgemm::tune
