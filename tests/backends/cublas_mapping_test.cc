// Checks the problem -> cuBLASLt mapping without a GPU: the fields of
// specific mappings (cublas_mapping_model_test.cc checks what they compute).
#include "backends/cublas_mapping.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jitgemm::backends {
namespace {

using ::testing::HasSubstr;

// A canonical problem: packed leading dimensions filled in, no batch.
GemmProblem Canonical(GemmProblem p) {
  auto fill = [](Operand& op, int64_t rows, int64_t cols) {
    if (op.ld == 0) op.ld = op.layout == Layout::kRowMajor ? cols : rows;
  };
  fill(p.a, p.m, p.k);
  fill(p.b, p.k, p.n);
  fill(p.c, p.m, p.n);
  fill(p.d, p.m, p.n);
  if (p.epilogue.beta == 0.0f) p.c = p.d;
  return p;
}

GemmProblem Gemm(int64_t m, int64_t n, int64_t k, DataType type) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a.type = p.b.type = p.c.type = p.d.type = type;
  return p;
}

// y = x W^T + bias, relu: x (M, K) row-major, W (N, K) row-major = B col-major.
GemmProblem LinearRelu(int64_t m, int64_t n, int64_t k, DataType type) {
  GemmProblem p = Gemm(m, n, k, type);
  p.b.layout = Layout::kColMajor;
  p.epilogue.bias = BiasMode::kPerColumn;
  p.epilogue.activation = Activation::kRelu;
  return Canonical(p);
}

TEST(CublasMappingTest, RowMajorLinearIsTransposedProductWithNativeBias) {
  auto map = MapToCublasLt(LinearRelu(8, 2048, 4096, DataType::kBF16), false);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_TRUE(map->swapped);
  EXPECT_EQ(map->m, 2048);
  EXPECT_EQ(map->n, 8);
  EXPECT_EQ(map->k, 4096);
  // Lt's A is W stored as (K x N) column-major, used transposed.
  EXPECT_TRUE(map->transpose_a);
  EXPECT_EQ(map->a.rows, 4096);
  EXPECT_EQ(map->a.cols, 2048);
  EXPECT_EQ(map->a.ld, 4096);
  // Lt's B is x^T: x row-major (M x K) is (K x M) column-major, no op.
  EXPECT_FALSE(map->transpose_b);
  EXPECT_EQ(map->b.rows, 4096);
  EXPECT_EQ(map->b.cols, 8);
  EXPECT_EQ(map->d.rows, 2048);
  EXPECT_EQ(map->d.cols, 8);
  EXPECT_EQ(map->d.ld, 2048);
  EXPECT_EQ(map->epilogue, LtEpilogue::kReluBias);
  EXPECT_FALSE(map->elementwise_after);
  EXPECT_EQ(map->compute, LtCompute::k32F);
  EXPECT_EQ(map->d.type, DataType::kBF16);
}

TEST(CublasMappingTest, ColumnMajorOutputIsDirectProduct) {
  GemmProblem p = Gemm(64, 128, 256, DataType::kF16);
  p.a.layout = Layout::kRowMajor;
  p.b.layout = Layout::kColMajor;
  p.d.layout = Layout::kColMajor;
  p.epilogue.bias = BiasMode::kPerRow;
  p.epilogue.activation = Activation::kGeluTanh;
  auto map = MapToCublasLt(Canonical(p), false);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_FALSE(map->swapped);
  EXPECT_EQ(map->m, 64);
  EXPECT_EQ(map->n, 128);
  EXPECT_TRUE(map->transpose_a);   // row-major A is A^T column-major
  EXPECT_FALSE(map->transpose_b);  // column-major B as is
  EXPECT_EQ(map->a.rows, 256);
  EXPECT_EQ(map->a.cols, 64);
  EXPECT_EQ(map->d.rows, 64);
  EXPECT_EQ(map->epilogue, LtEpilogue::kGeluBias);
  EXPECT_FALSE(map->elementwise_after);
}

TEST(CublasMappingTest, BiasOnTheOtherAxisGoesToTheElementwisePass) {
  GemmProblem p = LinearRelu(16, 256, 128, DataType::kF16);
  p.epilogue.bias = BiasMode::kPerRow;  // row-major D: Lt's bias runs per column
  auto map = MapToCublasLt(p, false);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->epilogue, LtEpilogue::kDefault);
  EXPECT_TRUE(map->elementwise_after);
  EXPECT_TRUE(map->elementwise_bias);
  EXPECT_EQ(ElementwiseProblem(p, *map).epilogue.bias, BiasMode::kPerRow);

  p.d.layout = Layout::kColMajor;
  p.d.ld = p.m;
  p.c = p.d;
  p.epilogue.bias = BiasMode::kPerColumn;  // column-major D: Lt's bias runs per row
  map = MapToCublasLt(p, false);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->epilogue, LtEpilogue::kDefault);
  EXPECT_TRUE(map->elementwise_after);
  EXPECT_TRUE(map->elementwise_bias);
  EXPECT_EQ(ElementwiseProblem(p, *map).epilogue.bias, BiasMode::kPerColumn);
}

// The case PyTorch's F.linear + F.silu competes on: Lt's BIAS epilogue adds
// the bias (with alpha and beta), the pass applies only the activation.
TEST(CublasMappingTest, ActivationsWithoutLtEpilogueKeepLtsBias) {
  for (Activation act : {Activation::kGeluErf, Activation::kSilu}) {
    GemmProblem p = LinearRelu(4, 64, 32, DataType::kBF16);
    p.epilogue.activation = act;
    auto map = MapToCublasLt(p, false);
    ASSERT_TRUE(map.ok()) << map.status();
    EXPECT_EQ(map->epilogue, LtEpilogue::kBias) << ActivationName(act);
    EXPECT_TRUE(map->elementwise_after) << ActivationName(act);
    EXPECT_FALSE(map->elementwise_bias) << ActivationName(act);
    const GemmProblem pass = ElementwiseProblem(p, *map);
    EXPECT_EQ(pass.epilogue.bias, BiasMode::kNone) << ActivationName(act);
    EXPECT_EQ(pass.epilogue.activation, act);
    EXPECT_EQ(DebugString(*map),
              "D^T=B^T A^T opA=T opB=N m=64 n=4 k=32 batch=1 32F BIAS +elementwise");
  }
}

TEST(CublasMappingTest, BatchedBiasStrideGoesToLtWhenLtAddsTheBias) {
  GemmProblem p = LinearRelu(4, 64, 32, DataType::kF16);
  p.batch_count = 3;
  p.a.batch_stride = 4 * 32;
  p.d.batch_stride = 4 * 64;
  p.c = p.d;
  p.epilogue.bias_batch_stride = 64;
  p.epilogue.activation = Activation::kSilu;
  auto map = MapToCublasLt(Canonical(p), false);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->epilogue, LtEpilogue::kBias);
  EXPECT_EQ(map->bias_batch_stride, 64);
  EXPECT_EQ(ElementwiseProblem(p, *map).epilogue.bias_batch_stride, 0);
}

TEST(CublasMappingTest, ActivationWithoutLtEpilogueAndNoBias) {
  GemmProblem p = LinearRelu(4, 64, 32, DataType::kBF16);
  p.epilogue.bias = BiasMode::kNone;
  p.epilogue.activation = Activation::kGeluErf;
  auto map = MapToCublasLt(p, false);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->epilogue, LtEpilogue::kDefault);
  EXPECT_TRUE(map->elementwise_after);
  EXPECT_FALSE(map->elementwise_bias);
}

TEST(CublasMappingTest, EpilogueChoiceWithoutBias) {
  const std::vector<std::pair<Activation, LtEpilogue>> cases = {
      {Activation::kNone, LtEpilogue::kDefault},
      {Activation::kRelu, LtEpilogue::kRelu},
      {Activation::kGeluTanh, LtEpilogue::kGelu},
  };
  for (const auto& [act, want] : cases) {
    GemmProblem p = Gemm(32, 32, 32, DataType::kF16);
    p.epilogue.activation = act;
    auto map = MapToCublasLt(Canonical(p), false);
    ASSERT_TRUE(map.ok()) << map.status();
    EXPECT_EQ(map->epilogue, want) << ActivationName(act);
    EXPECT_FALSE(map->elementwise_after);
  }
  GemmProblem p = Gemm(32, 32, 32, DataType::kF16);
  p.epilogue.bias = BiasMode::kPerColumn;
  auto map = MapToCublasLt(Canonical(p), false);
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(map->epilogue, LtEpilogue::kBias);
}

TEST(CublasMappingTest, Tf32OnlyForF32InputsWhenAllowed) {
  auto f32 = Canonical(Gemm(64, 64, 64, DataType::kF32));
  EXPECT_EQ(MapToCublasLt(f32, false)->compute, LtCompute::k32F);
  EXPECT_EQ(MapToCublasLt(f32, true)->compute, LtCompute::k32FFastTf32);
  auto bf16 = Canonical(Gemm(64, 64, 64, DataType::kBF16));
  EXPECT_EQ(MapToCublasLt(bf16, true)->compute, LtCompute::k32F);
}

TEST(CublasMappingTest, HalfInputsMayWriteF32) {
  for (DataType in : {DataType::kF16, DataType::kBF16}) {
    GemmProblem p = Gemm(8, 8, 8, in);
    p.c.type = p.d.type = DataType::kF32;
    auto map = MapToCublasLt(Canonical(p), false);
    ASSERT_TRUE(map.ok()) << map.status();
    EXPECT_EQ(map->a.type, in);
    EXPECT_EQ(map->d.type, DataType::kF32);
    EXPECT_EQ(map->c.type, DataType::kF32);
  }
}

TEST(CublasMappingTest, TypePairsLtLacksAreUnimplemented) {
  GemmProblem p = Gemm(8, 8, 8, DataType::kF16);
  p.c.type = p.d.type = DataType::kBF16;
  auto map = MapToCublasLt(Canonical(p), false);
  ASSERT_FALSE(map.ok());
  EXPECT_EQ(map.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(map.status().message()), HasSubstr("f16 x f16 -> bf16"));

  p = Gemm(8, 8, 8, DataType::kBF16);
  p.b.type = DataType::kF16;
  map = MapToCublasLt(Canonical(p), false);
  ASSERT_FALSE(map.ok());
  EXPECT_EQ(map.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(CublasMappingTest, CMustMatchDOnlyWhenRead) {
  GemmProblem p = Gemm(8, 8, 8, DataType::kF16);
  p.epilogue.beta = 1.0f;
  p.c.type = DataType::kF32;
  auto map = MapToCublasLt(Canonical(p), false);
  ASSERT_FALSE(map.ok());
  EXPECT_EQ(map.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(map.status().message()), HasSubstr("c.type"));

  p.c.type = DataType::kF16;
  p.c.layout = Layout::kColMajor;
  map = MapToCublasLt(Canonical(p), false);
  ASSERT_FALSE(map.ok());
  EXPECT_THAT(std::string(map.status().message()), HasSubstr("c.layout"));

  p.epilogue.beta = 0.0f;  // C is not read: no constraint, C describes D
  GemmProblem q = p;
  q.c.type = DataType::kF32;
  map = MapToCublasLt(q, false);  // not canonicalised on purpose
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->c.type, map->d.type);
  EXPECT_EQ(map->c.ld, map->d.ld);
}

TEST(CublasMappingTest, GroupedLinearOfSeed001) {
  // x (B, G, Din) row-major, W (G, Din, Dout), y (B, G, Dout): a batch of G.
  const int64_t B = 2560, G = 12, Din = 1024, Dout = 3072;
  GemmProblem p = Gemm(B, Dout, Din, DataType::kBF16);
  p.batch_count = G;
  p.a = {DataType::kBF16, Layout::kRowMajor, G * Din, Din};
  p.b = {DataType::kBF16, Layout::kRowMajor, Dout, Din * Dout};
  p.d = {DataType::kBF16, Layout::kRowMajor, G * Dout, Dout};
  p.c = p.d;
  auto map = MapToCublasLt(p, false);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_TRUE(map->swapped);
  EXPECT_EQ(map->batch_count, G);
  EXPECT_FALSE(map->transpose_a);  // W row-major (Din x Dout) = (Dout x Din) col-major
  EXPECT_FALSE(map->transpose_b);
  EXPECT_EQ(map->a.ld, Dout);
  EXPECT_EQ(map->a.batch_stride, Din * Dout);
  EXPECT_EQ(map->b.ld, G * Din);
  EXPECT_EQ(map->b.batch_stride, Din);
  EXPECT_EQ(map->d.rows, Dout);
  EXPECT_EQ(map->d.cols, B);
  EXPECT_EQ(map->d.ld, G * Dout);
  EXPECT_EQ(map->d.batch_stride, Dout);
}

TEST(CublasMappingTest, UnbatchedStridesAreZero) {
  auto map = MapToCublasLt(LinearRelu(8, 64, 64, DataType::kF16), false);
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(map->a.batch_stride, 0);
  EXPECT_EQ(map->b.batch_stride, 0);
  EXPECT_EQ(map->c.batch_stride, 0);
  EXPECT_EQ(map->d.batch_stride, 0);
  EXPECT_EQ(map->bias_batch_stride, 0);
}

TEST(CublasMappingTest, WithoutLtEpilogueMovesEverythingToThePass) {
  GemmProblem p = LinearRelu(8, 64, 64, DataType::kF16);
  auto map = MapToCublasLt(p, false);
  ASSERT_TRUE(map.ok());
  CublasLtMapping plain = WithoutLtEpilogue(*map, p);
  EXPECT_EQ(plain.epilogue, LtEpilogue::kDefault);
  EXPECT_TRUE(plain.elementwise_after);
  EXPECT_TRUE(plain.elementwise_bias);
  EXPECT_EQ(ElementwiseProblem(p, plain).epilogue.bias, p.epilogue.bias);

  // Lt's BIAS for an activation it lacks: without it, the pass adds the bias.
  GemmProblem silu = p;
  silu.epilogue.activation = Activation::kSilu;
  auto silu_map = MapToCublasLt(silu, false);
  ASSERT_TRUE(silu_map.ok());
  ASSERT_FALSE(silu_map->elementwise_bias);
  EXPECT_TRUE(WithoutLtEpilogue(*silu_map, silu).elementwise_bias);
  EXPECT_EQ(plain.m, map->m);

  GemmProblem none = Canonical(Gemm(8, 8, 8, DataType::kF16));
  auto none_map = MapToCublasLt(none, false);
  ASSERT_TRUE(none_map.ok());
  EXPECT_FALSE(WithoutLtEpilogue(*none_map, none).elementwise_after);
}

TEST(CublasMappingTest, WithActivationInPassKeepsLtsBiasAndMovesOnlyTheActivation) {
  const GemmProblem p = LinearRelu(8, 64, 64, DataType::kF16);
  auto map = MapToCublasLt(p, false);
  ASSERT_TRUE(map.ok());
  ASSERT_EQ(map->epilogue, LtEpilogue::kReluBias);
  EXPECT_TRUE(LtActivates(*map));
  const CublasLtMapping split = WithActivationInPass(*map);
  EXPECT_EQ(split.epilogue, LtEpilogue::kBias);
  EXPECT_FALSE(LtActivates(split));
  EXPECT_TRUE(split.elementwise_after);
  EXPECT_FALSE(split.elementwise_bias);
  EXPECT_EQ(split.bias_batch_stride, map->bias_batch_stride);
  const GemmProblem pass = ElementwiseProblem(p, split);
  EXPECT_EQ(pass.epilogue.bias, BiasMode::kNone);
  EXPECT_EQ(pass.epilogue.activation, Activation::kRelu);

  GemmProblem gelu = p;
  gelu.epilogue.bias = BiasMode::kNone;
  gelu.epilogue.activation = Activation::kGeluTanh;
  auto gelu_map = MapToCublasLt(gelu, false);
  ASSERT_TRUE(gelu_map.ok());
  ASSERT_EQ(gelu_map->epilogue, LtEpilogue::kGelu);
  EXPECT_EQ(WithActivationInPass(*gelu_map).epilogue, LtEpilogue::kDefault);

  // Nothing to move: an activation Lt lacks (already in the pass), or none.
  for (Activation act : {Activation::kSilu, Activation::kGeluErf, Activation::kNone}) {
    GemmProblem q = p;
    q.epilogue.activation = act;
    auto q_map = MapToCublasLt(q, false);
    ASSERT_TRUE(q_map.ok());
    EXPECT_FALSE(LtActivates(*q_map)) << ActivationName(act);
    const CublasLtMapping same = WithActivationInPass(*q_map);
    EXPECT_EQ(same.epilogue, q_map->epilogue) << ActivationName(act);
    EXPECT_EQ(same.elementwise_after, q_map->elementwise_after) << ActivationName(act);
  }
}

// The passes a warm-up compiles so that every cuBLAS route exists with compiling off.
TEST(CublasMappingTest, CublasRoutePassesListEveryPassARouteRuns) {
  const GemmProblem relu = LinearRelu(8, 64, 64, DataType::kF16);
  std::vector<GemmProblem> passes = CublasRoutePasses(relu, false);
  ASSERT_EQ(passes.size(), 1u);  // Lt's RELU_BIAS alone, or BIAS + a relu pass
  EXPECT_EQ(passes[0].epilogue.bias, BiasMode::kNone);
  EXPECT_EQ(passes[0].epilogue.activation, Activation::kRelu);

  GemmProblem silu = relu;
  silu.epilogue.activation = Activation::kSilu;
  passes = CublasRoutePasses(silu, false);
  ASSERT_EQ(passes.size(), 1u);
  EXPECT_EQ(passes[0].epilogue.activation, Activation::kSilu);

  GemmProblem row_bias = relu;  // off Lt's axis: the pass adds the bias, then activates
  row_bias.epilogue.bias = BiasMode::kPerRow;
  passes = CublasRoutePasses(row_bias, false);
  ASSERT_EQ(passes.size(), 1u);
  EXPECT_EQ(passes[0].epilogue.bias, BiasMode::kPerRow);

  GemmProblem plain = relu;
  plain.epilogue.activation = Activation::kNone;
  EXPECT_TRUE(CublasRoutePasses(plain, false).empty());

  GemmProblem gated = silu;
  gated.epilogue.gate = Gate::kHalves;
  gated.b.ld = gated.k;
  passes = CublasRoutePasses(gated, false);
  ASSERT_EQ(passes.size(), 1u);
  EXPECT_EQ(passes[0].epilogue.gate, Gate::kHalves);
  EXPECT_EQ(passes[0].epilogue.bias, BiasMode::kNone) << "Lt adds the [gate | up] bias";
}

TEST(CublasMappingTest, DebugStringNamesTheShape) {
  auto map = MapToCublasLt(LinearRelu(1, 2048, 4096, DataType::kBF16), true);
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(DebugString(*map), "D^T=B^T A^T opA=T opB=N m=2048 n=1 k=4096 batch=1 32F RELU_BIAS");
  EXPECT_STREQ(LtEpilogueName(LtEpilogue::kGeluBias), "GELU_BIAS");
}

}  // namespace
}  // namespace jitgemm::backends
