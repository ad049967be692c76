// For every layout / bias / activation / batch combination, a CPU model of
// what cublasLtMatmul computes under the problem's cuBLASLt mapping
// (column-major layouts, op_a / op_b, bias along Lt's rows, then the
// elementwise pass) gives the problem's D exactly, also with Lt's activation
// left to the pass (WithActivationInPass); and for gated problems,
// the Lt call of the inner product into the [gate | up] workspace followed by
// the gate pass. No GPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "backends/cublas_mapping.h"
#include "gtest/gtest.h"
#include "jit/families/gate.h"
#include "jitgemm/problem.h"
#include "support/reference.h"

namespace jitgemm::backends {
namespace {

using ::jitgemm::support::RefActivate;

// ---------------------------------------------------------------------------
// The CPU model: what cuBLASLt computes under a mapping, and what the problem
// asks for, on double buffers indexed exactly as the device buffers would be.

int64_t Index(const Operand& op, int64_t batch, int64_t r, int64_t c) {
  return ::jitgemm::support::ElementIndex(op, r, c, batch);
}

int64_t Extent(const Operand& op, int64_t batches, int64_t rows, int64_t cols) {
  return Index(op, batches - 1, rows - 1, cols - 1) + 1;
}

struct Buffers {
  std::vector<double> a, b, c, d, bias;
};

// D as the problem defines it.
std::vector<double> ProblemReference(const GemmProblem& p, const Buffers& in) {
  std::vector<double> d = in.d;
  const auto& e = p.epilogue;
  for (int64_t bt = 0; bt < p.batch_count; ++bt) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        double acc = 0;
        for (int64_t kk = 0; kk < p.k; ++kk) {
          acc += in.a[Index(p.a, bt, i, kk)] * in.b[Index(p.b, bt, kk, j)];
        }
        double v = e.alpha * acc;
        if (e.beta != 0) v += e.beta * in.c[Index(p.c, bt, i, j)];
        if (e.bias == BiasMode::kPerColumn) v += in.bias[bt * e.bias_batch_stride + j];
        if (e.bias == BiasMode::kPerRow) v += in.bias[bt * e.bias_batch_stride + i];
        d[Index(p.d, bt, i, j)] = RefActivate(e.activation, v);
      }
    }
  }
  return d;
}

double LtElement(const LtMatrix& m, const std::vector<double>& buf, int64_t bt, int64_t r,
                 int64_t c) {
  return buf[bt * m.batch_stride + r + c * m.ld];
}

// D as cublasLtMatmul computes it under `map`, starting from in.d.
std::vector<double> LtCallModel(const CublasLtMapping& map, const Buffers& in) {
  const std::vector<double>& lt_a = map.swapped ? in.b : in.a;
  const std::vector<double>& lt_b = map.swapped ? in.a : in.b;
  std::vector<double> d = in.d;
  for (int64_t bt = 0; bt < map.batch_count; ++bt) {
    for (int64_t i = 0; i < map.m; ++i) {
      for (int64_t j = 0; j < map.n; ++j) {
        double acc = 0;
        for (int64_t kk = 0; kk < map.k; ++kk) {
          const double av = map.transpose_a ? LtElement(map.a, lt_a, bt, kk, i)
                                            : LtElement(map.a, lt_a, bt, i, kk);
          const double bv = map.transpose_b ? LtElement(map.b, lt_b, bt, j, kk)
                                            : LtElement(map.b, lt_b, bt, kk, j);
          acc += av * bv;
        }
        double v = map.alpha * acc;
        if (map.beta != 0) v += map.beta * LtElement(map.c, in.c, bt, i, j);
        switch (map.epilogue) {
          case LtEpilogue::kBias:
          case LtEpilogue::kReluBias:
          case LtEpilogue::kGeluBias:
            v += in.bias[bt * map.bias_batch_stride + i];  // along Lt's rows
            break;
          default:
            break;
        }
        switch (map.epilogue) {
          case LtEpilogue::kRelu:
          case LtEpilogue::kReluBias:
            v = RefActivate(Activation::kRelu, v);
            break;
          case LtEpilogue::kGelu:
          case LtEpilogue::kGeluBias:
            v = RefActivate(Activation::kGeluTanh, v);
            break;
          default:
            break;
        }
        d[bt * map.d.batch_stride + i + j * map.d.ld] = v;
      }
    }
  }
  return d;
}

// D as cublasLtMatmul computes it under `map`, then the elementwise pass.
std::vector<double> LtModel(const GemmProblem& p, const CublasLtMapping& map, const Buffers& in) {
  std::vector<double> d = LtCallModel(map, in);
  if (map.elementwise_after) {
    // The pass does what ElementwiseProblem says, and nothing else.
    const GemmProblem pass = ElementwiseProblem(p, map);
    const auto& e = pass.epilogue;
    for (int64_t bt = 0; bt < p.batch_count; ++bt) {
      for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t j = 0; j < p.n; ++j) {
          double& v = d[Index(p.d, bt, i, j)];
          if (e.bias == BiasMode::kPerColumn) v += in.bias[bt * e.bias_batch_stride + j];
          if (e.bias == BiasMode::kPerRow) v += in.bias[bt * e.bias_batch_stride + i];
          v = RefActivate(e.activation, v);
        }
      }
    }
  }
  return d;
}

using ModelParam = std::tuple<Layout, Layout, Layout, BiasMode, Activation, int, bool>;

class CublasMappingModelTest : public ::testing::TestWithParam<ModelParam> {};

TEST_P(CublasMappingModelTest, LtModelEqualsProblem) {
  const auto [la, lb, ld_layout, bias, act, batch, with_c] = GetParam();
  const int64_t m = 5, n = 7, k = 3;
  GemmProblem p = MakeGemm(m, n, k, DataType::kF16);
  p.batch_count = batch;
  // Padded leading dimensions so that rows and columns cannot be confused.
  auto make = [](Layout l, int64_t rows, int64_t cols) {
    Operand op;
    op.type = DataType::kF16;
    op.layout = l;
    op.ld = (l == Layout::kRowMajor ? cols : rows) + 2;
    return op;
  };
  p.a = make(la, m, k);
  p.b = make(lb, k, n);
  p.d = make(ld_layout, m, n);
  p.c = make(ld_layout, m, n);
  p.c.ld += 1;
  if (batch > 1) {
    const int64_t lines_a = la == Layout::kRowMajor ? m : k;
    const int64_t lines_d = ld_layout == Layout::kRowMajor ? m : n;
    p.a.batch_stride = lines_a * p.a.ld + 1;
    p.b.batch_stride = 0;  // one B broadcast to every batch
    p.c.batch_stride = lines_d * p.c.ld;
    p.d.batch_stride = lines_d * p.d.ld + 3;
    p.epilogue.bias_batch_stride = 9;
  }
  p.epilogue.alpha = 0.75f;
  p.epilogue.beta = with_c ? -0.5f : 0.0f;
  if (!with_c) p.c = p.d;
  p.epilogue.bias = bias;
  p.epilogue.activation = act;

  auto map = MapToCublasLt(p, false);
  ASSERT_TRUE(map.ok()) << map.status();

  std::mt19937 rng(1234);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  auto random = [&](int64_t size) {
    std::vector<double> v(size);
    for (double& x : v) x = dist(rng);
    return v;
  };
  Buffers in;
  in.a = random(Extent(p.a, batch, m, k));
  in.b = random(Extent(p.b, batch, k, n));
  in.c = random(Extent(p.c, batch, m, n));
  in.d = random(Extent(p.d, batch, m, n));  // untouched elements must stay
  in.bias = random(9 * (batch - 1) + std::max(m, n));

  const std::vector<double> want = ProblemReference(p, in);
  // The mapping, and the same product with Lt's activation left to the pass.
  for (const CublasLtMapping& route : {*map, WithActivationInPass(*map)}) {
    const std::vector<double> got = LtModel(p, route, in);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-12) << "element " << i << " of D, " << DebugString(route);
    }
    EXPECT_FALSE(route.elementwise_after && route.elementwise_bias && LtActivates(route));
  }
  // Lt's descriptors must describe matrices that fit the buffers.
  EXPECT_GE(map->a.ld, map->a.rows);
  EXPECT_GE(map->b.ld, map->b.rows);
  EXPECT_GE(map->c.ld, map->c.rows);
  EXPECT_GE(map->d.ld, map->d.rows);
  EXPECT_EQ(map->transpose_a ? map->a.cols : map->a.rows, map->m);
  EXPECT_EQ(map->transpose_b ? map->b.rows : map->b.cols, map->n);
}

INSTANTIATE_TEST_SUITE_P(
    AllShapes, CublasMappingModelTest,
    ::testing::Combine(::testing::Values(Layout::kRowMajor, Layout::kColMajor),
                       ::testing::Values(Layout::kRowMajor, Layout::kColMajor),
                       ::testing::Values(Layout::kRowMajor, Layout::kColMajor),
                       ::testing::Values(BiasMode::kNone, BiasMode::kPerColumn, BiasMode::kPerRow),
                       ::testing::Values(Activation::kNone, Activation::kRelu,
                                         Activation::kGeluTanh, Activation::kGeluErf,
                                         Activation::kSilu),
                       ::testing::Values(1, 3), ::testing::Bool()));

// ---------------------------------------------------------------------------
// Gated problems: D = act(gate + bias_gate) * (up + bias_up).

// D as the gated problem defines it.
std::vector<double> GatedReference(const GemmProblem& p, const Buffers& in) {
  std::vector<double> d = in.d;
  const auto& e = p.epilogue;
  auto column = [&](int64_t bt, int64_t i, int64_t j) {
    double acc = 0;
    for (int64_t kk = 0; kk < p.k; ++kk) {
      acc += in.a[Index(p.a, bt, i, kk)] * in.b[Index(p.b, bt, kk, j)];
    }
    double v = e.alpha * acc;
    if (e.bias == BiasMode::kPerColumn) v += in.bias[bt * e.bias_batch_stride + j];
    return v;
  };
  for (int64_t bt = 0; bt < p.batch_count; ++bt) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        d[Index(p.d, bt, i, j)] =
            RefActivate(e.activation, column(bt, i, j)) * column(bt, i, p.n + j);
      }
    }
  }
  return d;
}

// The gate pass of GatePassProblem(p, map), reading the workspace `w`.
std::vector<double> GatePassModel(const GemmProblem& p, const CublasLtMapping& map,
                                  const std::vector<double>& w, const Buffers& in) {
  const GemmProblem pass = GatePassProblem(p, map);
  const Operand wop = jit::GateProductOperand(p);
  std::vector<double> d = in.d;
  for (int64_t bt = 0; bt < p.batch_count; ++bt) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        const int64_t at = Index(wop, bt, i, j);
        // The kernel finds the up half GateUpOffset elements on.
        EXPECT_EQ(Index(wop, bt, i, p.n + j), at + jit::GateUpOffset(p));
        double gate = w[at], up = w[at + jit::GateUpOffset(p)];
        if (pass.epilogue.bias == BiasMode::kPerColumn) {
          gate += in.bias[bt * pass.epilogue.bias_batch_stride + j];
          up += in.bias[bt * pass.epilogue.bias_batch_stride + p.n + j];
        }
        d[Index(p.d, bt, i, j)] = RefActivate(pass.epilogue.activation, gate) * up;
      }
    }
  }
  return d;
}

using GatedParam = std::tuple<Layout, Layout, Layout, BiasMode, Activation, int>;

class CublasGatedModelTest : public ::testing::TestWithParam<GatedParam> {};

TEST_P(CublasGatedModelTest, LtProductThenGatePassEqualsProblem) {
  const auto [la, lb, ld_layout, bias, act, batch] = GetParam();
  const int64_t m = 5, n = 3, k = 4;  // B has 2N = 6 columns
  GemmProblem p = MakeGemm(m, n, k, DataType::kBF16);
  p.batch_count = batch;
  auto make = [](Layout l, int64_t rows, int64_t cols) {
    Operand op;
    op.type = DataType::kBF16;
    op.layout = l;
    op.ld = (l == Layout::kRowMajor ? cols : rows) + 2;
    return op;
  };
  p.a = make(la, m, k);
  p.b = make(lb, k, 2 * n);
  p.d = make(ld_layout, m, n);
  if (batch > 1) {
    p.a.batch_stride = (la == Layout::kRowMajor ? m : k) * p.a.ld + 1;
    p.b.batch_stride = (lb == Layout::kRowMajor ? k : 2 * n) * p.b.ld;
    p.d.batch_stride = (ld_layout == Layout::kRowMajor ? m : n) * p.d.ld + 3;
    p.epilogue.bias_batch_stride = 2 * n + 1;
  }
  p.c = p.d;
  p.epilogue.alpha = -0.75f;
  p.epilogue.bias = bias;
  p.epilogue.activation = act;
  p.epilogue.gate = Gate::kHalves;
  p = Canonicalize(p);
  ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);

  const GemmProblem inner = GatedProductProblem(p);
  ASSERT_TRUE(ValidateProblem(inner).ok()) << ValidateProblem(inner);
  auto map = MapToCublasLt(inner, false);
  ASSERT_TRUE(map.ok()) << map.status();

  std::mt19937 rng(4321);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  auto random = [&](int64_t size) {
    std::vector<double> v(size);
    for (double& x : v) x = dist(rng);
    return v;
  };
  Buffers in;
  in.a = random(Extent(p.a, batch, m, k));
  in.b = random(Extent(p.b, batch, k, 2 * n));
  in.d = random(Extent(p.d, batch, m, n));  // untouched elements must stay
  in.bias = random((2 * n + 1) * (batch - 1) + 2 * n);

  // The Lt call writes every element of the workspace and nothing else.
  Buffers lt_in = in;
  lt_in.d.assign(jit::GateProductElements(p), std::nan(""));
  ASSERT_EQ(Extent(jit::GateProductOperand(p), batch, m, 2 * n), jit::GateProductElements(p));
  const std::vector<double> w = LtCallModel(*map, lt_in);
  for (size_t i = 0; i < w.size(); ++i) ASSERT_FALSE(std::isnan(w[i])) << "workspace " << i;

  const std::vector<double> want = GatedReference(p, in);
  const std::vector<double> got = GatePassModel(p, *map, w, in);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-12) << "element " << i << " of D, " << DebugString(*map);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllShapes, CublasGatedModelTest,
    ::testing::Combine(::testing::Values(Layout::kRowMajor, Layout::kColMajor),
                       ::testing::Values(Layout::kRowMajor, Layout::kColMajor),
                       ::testing::Values(Layout::kRowMajor, Layout::kColMajor),
                       ::testing::Values(BiasMode::kNone, BiasMode::kPerColumn),
                       ::testing::Values(Activation::kNone, Activation::kRelu,
                                         Activation::kGeluTanh, Activation::kGeluErf,
                                         Activation::kSilu),
                       ::testing::Values(1, 3)));

}  // namespace
}  // namespace jitgemm::backends
