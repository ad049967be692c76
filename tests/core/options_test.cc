#include "jitgemm/options.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace jitgemm {
namespace {

class OptionsEnvTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* v : {"JITGEMM_PDL", "JITGEMM_CONSTANT_B", "JITGEMM_TUNING", "JITGEMM_JIT",
                          "JITGEMM_BACKEND", "JITGEMM_ARCH", "JITGEMM_REGIME"}) {
      unsetenv(v);
    }
  }
};

TEST_F(OptionsEnvTest, DefaultsAreSafe) {
  const Options o = Options::FromEnvironment();
  EXPECT_TRUE(o.pdl);
  EXPECT_FALSE(o.constant_b) << "early reads of B need the caller's promise";
  EXPECT_EQ(o.tuning, TuningPolicy::kFast);
  EXPECT_TRUE(o.jit_enabled);
  EXPECT_EQ(o.regime, TimingRegime::kAuto);
}

TEST_F(OptionsEnvTest, RegimeFromTheEnvironment) {
  setenv("JITGEMM_REGIME", "Resident", 1);
  EXPECT_EQ(Options::FromEnvironment().regime, TimingRegime::kResident);
  setenv("JITGEMM_REGIME", "streaming", 1);
  EXPECT_EQ(Options::FromEnvironment().regime, TimingRegime::kStreaming);
  setenv("JITGEMM_REGIME", "l2", 1);
  EXPECT_EQ(Options::FromEnvironment().regime, TimingRegime::kAuto);
}

TEST_F(OptionsEnvTest, EnvironmentOverrides) {
  setenv("JITGEMM_PDL", "off", 1);
  setenv("JITGEMM_CONSTANT_B", "1", 1);
  setenv("JITGEMM_TUNING", "Exhaustive", 1);
  setenv("JITGEMM_JIT", "0", 1);
  setenv("JITGEMM_BACKEND", "cublas", 1);
  setenv("JITGEMM_ARCH", "sm_90a", 1);
  const Options o = Options::FromEnvironment();
  EXPECT_FALSE(o.pdl);
  EXPECT_TRUE(o.constant_b);
  EXPECT_EQ(o.tuning, TuningPolicy::kExhaustive);
  EXPECT_FALSE(o.jit_enabled);
  EXPECT_EQ(o.backend, BackendPolicy::kCublasOnly);
  EXPECT_EQ(o.arch, "sm_90a");
}

TEST_F(OptionsEnvTest, UnknownValuesKeepDefaults) {
  setenv("JITGEMM_CONSTANT_B", "maybe", 1);
  setenv("JITGEMM_PDL", "yes", 1);
  const Options o = Options::FromEnvironment();
  EXPECT_FALSE(o.constant_b);
  EXPECT_TRUE(o.pdl);
}

}  // namespace
}  // namespace jitgemm
