#include "core/planned_problem.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/reference.h"
#include "support/status_matchers.h"

namespace jitgemm {
namespace {

using ::jitgemm::support::IsOk;

// A batched problem with every operand described apart: column-major D, a
// row-major C of its own leading dimension, a per-column bias per batch.
GemmProblem ColumnMajorD() {
  GemmProblem p;
  p.m = 288;
  p.n = 272;
  p.k = 72;
  p.batch_count = 3;
  p.a = {DataType::kBF16, Layout::kRowMajor, 80, 288 * 80};
  p.b = {DataType::kBF16, Layout::kColMajor, 72, 72 * 272 + 8};
  p.c = {DataType::kF32, Layout::kRowMajor, 280, 288 * 280};
  p.d = {DataType::kF32, Layout::kColMajor, 300, 300 * 272};
  p.epilogue.beta = 0.5f;
  p.epilogue.alpha = 2.0f;
  p.epilogue.bias = BiasMode::kPerColumn;
  p.epilogue.bias_batch_stride = 272;
  p.epilogue.activation = Activation::kSilu;
  return Canonicalize(p);
}

TEST(PlanProblemTest, PlansAColumnMajorDAsItsTranspose) {
  const GemmProblem p = ColumnMajorD();
  const PlannedProblem planned = PlanProblem(p, Options());
  ASSERT_TRUE(planned.transposed);
  const GemmProblem& t = planned.problem;
  EXPECT_EQ(t.m, 272);
  EXPECT_EQ(t.n, 288);
  EXPECT_EQ(t.k, 72);
  EXPECT_EQ(t.a.layout, Layout::kRowMajor);  // B^T of a column-major B
  EXPECT_EQ(t.a.ld, 72);
  EXPECT_EQ(t.a.batch_stride, 72 * 272 + 8);
  EXPECT_EQ(t.b.layout, Layout::kColMajor);  // A^T of a row-major A
  EXPECT_EQ(t.b.ld, 80);
  EXPECT_EQ(t.c.layout, Layout::kColMajor);
  EXPECT_EQ(t.d.layout, Layout::kRowMajor);
  EXPECT_EQ(t.d.ld, 300);
  EXPECT_EQ(t.epilogue.bias, BiasMode::kPerRow);
  EXPECT_EQ(t.epilogue.bias_batch_stride, 272);
  EXPECT_THAT(ValidateProblem(t), IsOk());
  // Transposing twice gives the problem back.
  const GemmProblem back = TransposeProblem(t);
  EXPECT_EQ(back.m, p.m);
  EXPECT_EQ(back.a.layout, p.a.layout);
  EXPECT_EQ(back.b.batch_stride, p.b.batch_stride);
  EXPECT_EQ(back.d.layout, p.d.layout);
  EXPECT_EQ(back.epilogue.bias, p.epilogue.bias);
}

// The transpose over the same bytes, A and B swapped, computes the same D.
TEST(PlanProblemTest, TheTransposeComputesTheSameDOverTheSameMemory) {
  for (BiasMode bias : {BiasMode::kNone, BiasMode::kPerColumn, BiasMode::kPerRow}) {
    GemmProblem p = ColumnMajorD();
    p.epilogue.bias = bias;
    p = Canonicalize(p);
    const GemmProblem t = TransposeProblem(p);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    auto fill = [&](DataType type, int64_t count) {
      std::vector<uint16_t> half(count);
      std::vector<float> full(count);
      for (int64_t i = 0; i < count; ++i) {
        full[i] = u(rng);
        half[i] = FloatToBf16(full[i]);
      }
      return type == DataType::kF32
                 ? std::vector<uint16_t>(reinterpret_cast<uint16_t*>(full.data()),
                                         reinterpret_cast<uint16_t*>(full.data() + count))
                 : half;
    };
    const std::vector<uint16_t> a = fill(p.a.type, 3 * 288 * 80);
    const std::vector<uint16_t> b = fill(p.b.type, 3 * (72 * 272 + 8));
    const std::vector<uint16_t> c = fill(p.c.type, 3 * 288 * 280);
    const std::vector<uint16_t> bias_values = fill(p.d.type, 3 * 288);
    const std::vector<double> want =
        support::ReferenceGemm(p, a.data(), b.data(), c.data(), bias_values.data());
    const std::vector<double> got =
        support::ReferenceGemm(t, b.data(), a.data(), c.data(), bias_values.data());
    ASSERT_EQ(want.size(), got.size());
    for (int64_t batch = 0; batch < 3; ++batch) {
      for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t j = 0; j < p.n; ++j) {
          ASSERT_EQ(want[(batch * p.m + i) * p.n + j], got[(batch * p.n + j) * p.m + i])
              << "bias mode " << static_cast<int>(bias) << " at " << batch << ", " << i << ", "
              << j;
        }
      }
    }
  }
}

TEST(PlanProblemTest, KeepsWhatTheTransposeWouldServeWorse) {
  EXPECT_FALSE(PlanProblem(Canonicalize(MakeGemm(256, 256, 64, DataType::kF16)), Options())
                   .transposed);  // row-major D
  GemmProblem gated = ColumnMajorD();
  gated.epilogue.beta = 0.f;
  gated.epilogue.gate = Gate::kHalves;
  gated.b.batch_stride = 72 * 544;
  EXPECT_FALSE(PlanProblem(Canonicalize(gated), Options()).transposed);
  GemmProblem skinny = ColumnMajorD();
  skinny.m = kPlanMinSide - 1;
  EXPECT_FALSE(PlanProblem(skinny, Options()).transposed);
  skinny.m = kPlanMinSide;
  skinny.n = kPlanMinSide - 1;
  EXPECT_FALSE(PlanProblem(skinny, Options()).transposed);
  skinny.n = kPlanMinSide;
  EXPECT_TRUE(PlanProblem(skinny, Options()).transposed);
  skinny.k = kPlanMinK - 1;
  EXPECT_FALSE(PlanProblem(skinny, Options()).transposed);
  GemmProblem broadcast = ColumnMajorD();
  broadcast.b.batch_stride = 0;
  EXPECT_FALSE(PlanProblem(broadcast, Options()).transposed);
  Options constant_b;
  constant_b.constant_b = true;
  EXPECT_FALSE(PlanProblem(ColumnMajorD(), constant_b).transposed);
}

}  // namespace
}  // namespace jitgemm
