// The float64 reference's error measure (support/reference.h): relative to the
// reference's norm, with a floor for results that all lie in an activation's
// tail. No GPU.
#include "support/reference.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "jitgemm/problem.h"

namespace jitgemm::support {
namespace {

// A 1 x 2 fp32 D holding `got`, checked against `want`.
double ErrorOf(std::vector<float> got, const std::vector<double>& want) {
  GemmProblem p = MakeGemm(1, 2, 8, DataType::kF32);
  p.d.ld = 2;
  return RelativeError(p, got.data(), want);
}

TEST(ReferenceTest, RelativeErrorIsRelativeToTheReference) {
  EXPECT_EQ(ErrorOf({1.f, -2.f}, {1.0, -2.0}), 0.0);
  EXPECT_NEAR(ErrorOf({1.01f, -2.f}, {1.0, -2.0}), 0.01 / std::sqrt(5.0), 1e-7);
  EXPECT_GT(ErrorOf({0.f, 0.f}, {1.0, -2.0}), 0.99);
  EXPECT_TRUE(std::isinf(ErrorOf({std::numeric_limits<float>::quiet_NaN(), 0.f}, {1.0, 0.0})));
}

TEST(ReferenceTest, ResultsInAnActivationsTailAreMeasuredAgainstAFloor) {
  // GELU-erf of -8 and -9: a 16-bit kernel stores 0, right to its precision.
  EXPECT_LT(ErrorOf({0.f, 0.f}, {-5e-15, -1e-18}), 1e-9);
  // A tiny reference does not excuse a result that is off in absolute terms.
  EXPECT_GT(ErrorOf({0.05f, 0.f}, {-5e-15, -1e-18}), 1.0);
}

}  // namespace
}  // namespace jitgemm::support
