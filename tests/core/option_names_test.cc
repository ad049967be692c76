#include "core/option_names.h"

#include "gtest/gtest.h"

namespace jitgemm {
namespace {

// Each enum value's name reads back as that value, and only those names parse
// (the environment, manifests and flags share them).
TEST(OptionNamesTest, EveryValueRoundTripsAndOthersDoNotParse) {
  for (BackendPolicy b :
       {BackendPolicy::kAuto, BackendPolicy::kJitOnly, BackendPolicy::kCublasOnly}) {
    EXPECT_EQ(ParseBackendPolicy(BackendPolicyName(b)), b) << BackendPolicyName(b);
  }
  for (TuningPolicy t :
       {TuningPolicy::kHeuristic, TuningPolicy::kFast, TuningPolicy::kExhaustive}) {
    EXPECT_EQ(ParseTuningPolicy(TuningPolicyName(t)), t) << TuningPolicyName(t);
  }
  for (TimingRegime r : {TimingRegime::kAuto, TimingRegime::kStreaming, TimingRegime::kResident}) {
    EXPECT_EQ(ParseTimingRegime(TimingRegimeName(r)), r) << TimingRegimeName(r);
  }
  EXPECT_STREQ(BackendPolicyName(BackendPolicy::kJitOnly), "jit");
  EXPECT_STREQ(TuningPolicyName(TuningPolicy::kFast), "fast");
  EXPECT_STREQ(TimingRegimeName(TimingRegime::kResident), "resident");
  EXPECT_FALSE(ParseBackendPolicy("cudnn").has_value());
  EXPECT_FALSE(ParseTuningPolicy("").has_value());
  EXPECT_FALSE(ParseTimingRegime("Resident").has_value());  // callers lower-case first
}

}  // namespace
}  // namespace jitgemm
