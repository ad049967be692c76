// The cuBLAS route of a gated problem without a GPU: the inner product Lt
// computes into the [gate | up] workspace, where the bias goes, and what
// the gate pass is left to do (cublas_mapping_model_test.cc checks what the
// two compute together).
#include <cstdint>

#include "backends/cublas_mapping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/families/gate.h"
#include "jitgemm/problem.h"

namespace jitgemm::backends {
namespace {

using ::testing::HasSubstr;

// Seed 001's gated projection: x (B, G, 1024) -> h (B, G, 3072), per group
// [W_gate | W_up] row-major 1024 x 6144, SwiGLU, optional bias.
GemmProblem GroupedSwiglu(BiasMode bias) {
  GemmProblem p;
  p.m = 2560;
  p.n = 3072;
  p.k = 1024;
  p.batch_count = 12;
  p.a = {DataType::kBF16, Layout::kRowMajor, 12 * 1024, 1024};
  p.b = {DataType::kBF16, Layout::kRowMajor, 6144, 1024 * 6144};
  p.d = {DataType::kBF16, Layout::kRowMajor, 12 * 3072, 3072};
  p.c = p.d;
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.activation = Activation::kSilu;
  p.epilogue.bias = bias;
  if (bias != BiasMode::kNone) p.epilogue.bias_batch_stride = 6144;
  return Canonicalize(p);
}

TEST(CublasGatedMappingTest, OneGatedCallIsRefused) {
  auto map = MapToCublasLt(GroupedSwiglu(BiasMode::kNone), false);
  ASSERT_FALSE(map.ok());
  EXPECT_EQ(map.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(map.status().message()), HasSubstr("GatedProductProblem"));
}

TEST(CublasGatedMappingTest, InnerProductHasAllColumnsIntoThePackedWorkspace) {
  const GemmProblem p = GroupedSwiglu(BiasMode::kNone);
  const GemmProblem inner = GatedProductProblem(p);
  EXPECT_EQ(inner.n, 6144);
  EXPECT_EQ(inner.epilogue.gate, Gate::kNone);
  EXPECT_EQ(inner.epilogue.activation, Activation::kNone);
  EXPECT_EQ(inner.d.ld, 6144);
  EXPECT_EQ(inner.d.batch_stride, 2560 * 6144);
  EXPECT_EQ(inner.d.type, DataType::kBF16);
  EXPECT_TRUE(ValidateProblem(inner).ok()) << ValidateProblem(inner);

  auto map = MapToCublasLt(inner, false);
  ASSERT_TRUE(map.ok()) << map.status();
  // D^T = B^T A^T: Lt's m runs over all 2N columns of B, its n over x's rows.
  EXPECT_TRUE(map->swapped);
  EXPECT_EQ(map->m, 6144);
  EXPECT_EQ(map->n, 2560);
  EXPECT_EQ(map->k, 1024);
  EXPECT_EQ(map->batch_count, 12);
  EXPECT_EQ(map->a.rows, 6144);  // [W_gate | W_up] row-major: K x 2N is 2N x K column-major
  EXPECT_EQ(map->a.ld, 6144);
  EXPECT_EQ(map->a.batch_stride, 1024 * 6144);
  EXPECT_EQ(map->b.ld, 12 * 1024);  // x read in place, rows G * K apart
  EXPECT_EQ(map->b.batch_stride, 1024);
  EXPECT_EQ(map->d.rows, 6144);
  EXPECT_EQ(map->d.cols, 2560);
  EXPECT_EQ(map->d.ld, 6144);
  EXPECT_EQ(map->d.batch_stride, 2560 * 6144);
  EXPECT_EQ(map->epilogue, LtEpilogue::kDefault);
  EXPECT_FALSE(map->elementwise_after);
  EXPECT_EQ(GatePassProblem(p, *map).epilogue.activation, Activation::kSilu);
}

TEST(CublasGatedMappingTest, BiasOfBothHalvesGoesToLtWithRowMajorD) {
  const GemmProblem p = GroupedSwiglu(BiasMode::kPerColumn);
  auto map = MapToCublasLt(GatedProductProblem(p), false);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->epilogue, LtEpilogue::kBias);
  EXPECT_EQ(map->bias_batch_stride, 6144);
  EXPECT_FALSE(map->elementwise_after);
  const GemmProblem pass = GatePassProblem(p, *map);
  EXPECT_EQ(pass.epilogue.bias, BiasMode::kNone);
  EXPECT_EQ(pass.epilogue.bias_batch_stride, 0);
  EXPECT_EQ(pass.epilogue.gate, Gate::kHalves);
  EXPECT_EQ(pass.epilogue.activation, Activation::kSilu);
  EXPECT_EQ(pass.d.ld, 12 * 3072);  // the pass writes the problem's D
}

TEST(CublasGatedMappingTest, BiasGoesToTheGatePassWithColumnMajorD) {
  GemmProblem p = MakeGemm(33, 17, 40, DataType::kF16);
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.activation = Activation::kGeluErf;
  p.epilogue.bias = BiasMode::kPerColumn;
  p.b.ld = 34;
  p.d.layout = Layout::kColMajor;
  p.d.ld = 40;
  p.c = p.d;
  p = Canonicalize(p);
  const GemmProblem inner = GatedProductProblem(p);
  EXPECT_EQ(inner.d.layout, Layout::kColMajor);
  EXPECT_EQ(inner.d.ld, 33);
  auto map = MapToCublasLt(inner, false);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_FALSE(map->swapped);
  EXPECT_EQ(map->m, 33);
  EXPECT_EQ(map->n, 34);
  EXPECT_EQ(map->epilogue, LtEpilogue::kDefault);
  EXPECT_TRUE(map->elementwise_bias);
  EXPECT_EQ(GatePassProblem(p, *map).epilogue.bias, BiasMode::kPerColumn);
  // Where Lt has no algorithm for its BIAS epilogue, the bias moves to the pass too.
  auto row = MapToCublasLt(GatedProductProblem(GroupedSwiglu(BiasMode::kPerColumn)), false);
  ASSERT_TRUE(row.ok());
  const CublasLtMapping plain =
      WithoutLtEpilogue(*row, GatedProductProblem(GroupedSwiglu(BiasMode::kPerColumn)));
  EXPECT_EQ(plain.epilogue, LtEpilogue::kDefault);
  EXPECT_EQ(GatePassProblem(GroupedSwiglu(BiasMode::kPerColumn), plain).epilogue.bias,
            BiasMode::kPerColumn);
}

TEST(CublasGatedMappingTest, HalfInputsMayGateIntoF32) {
  GemmProblem p = GroupedSwiglu(BiasMode::kNone);
  p.d.type = DataType::kF32;
  const GemmProblem inner = GatedProductProblem(p);
  EXPECT_EQ(inner.d.type, DataType::kF32);  // the workspace has D's type
  auto map = MapToCublasLt(inner, false);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->d.type, DataType::kF32);
  EXPECT_EQ(jit::GateProductElements(p), int64_t{12} * 2560 * 6144);
}

}  // namespace
}  // namespace jitgemm::backends
