// jitgemm-bench's suites as data (BENCHMARKS.md and issue 15's rows) and the
// columns each problem gets. No GPU.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tools/bench/suites.h"

namespace jitgemm::bench {
namespace {

TEST(SuitesTest, MatchBenchmarksMd) {
  EXPECT_EQ(MakeSuite("S1")->size(), 21u);
  EXPECT_EQ(MakeSuite("s2")->size(), 12u);
  EXPECT_EQ(MakeSuite("S3")->size(), 1u);
  EXPECT_EQ(MakeSuite("S6")->size(), 11u);
  // Issue 20's two rows, x W^T with the weight column-major.
  const std::vector<BenchCase> regimes = *MakeSuite("regimes");
  ASSERT_EQ(regimes.size(), 2u);
  EXPECT_EQ(regimes[0].label, "bf16 M=1 N=32768 K=512");
  EXPECT_EQ(regimes[1].label, "bf16 M=128 N=2112 K=7168");
  EXPECT_EQ(regimes[1].problem.b.layout, Layout::kColMajor);
  auto bad = MakeSuite("S4");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);

  const BenchCase s1 = MakeSuite("S1")->front();
  EXPECT_EQ(s1.label, "bf16 M=1 N=2048 K=4096");
  EXPECT_EQ(s1.rotate, 100);
  EXPECT_TRUE(s1.memory_bound);
  EXPECT_EQ(s1.problem.b.layout, Layout::kColMajor);
  EXPECT_EQ(s1.problem.b.ld, 4096);
  // 16.8 MB of weights, as BENCHMARKS.md says.
  EXPECT_NEAR(BytesMoved(s1.problem), 2048.0 * 4096 * 2 + 4096 * 2 + 2048 * 2, 1);

  const BenchCase s2 = MakeSuite("S2")->front();  // "64 x 256 x 128" is M x K x N
  EXPECT_EQ(s2.problem.m, 64);
  EXPECT_EQ(s2.problem.k, 256);
  EXPECT_EQ(s2.problem.n, 128);
  EXPECT_EQ(s2.problem.epilogue.bias, BiasMode::kPerColumn);
  EXPECT_EQ(s2.problem.epilogue.activation, Activation::kRelu);
  EXPECT_FALSE(ComputesEpilogue(Impl::kCublasMm, s2.problem));
  EXPECT_TRUE(ComputesEpilogue(Impl::kLtBiasAct, s2.problem));
  EXPECT_EQ(s2.impls, (std::vector<Impl>{Impl::kCublasMm, Impl::kAddmmAct, Impl::kLtBiasAct,
                                         Impl::kJit, Impl::kAuto}));

  const BenchCase s3 = MakeSuite("S3")->front();
  EXPECT_EQ(s3.problem.batch_count, 12);
  EXPECT_EQ(s3.problem.d.ld, 12 * 3072);
  EXPECT_EQ(s3.problem.d.batch_stride, 3072);
  EXPECT_DOUBLE_EQ(Flops(s3.problem), 2.0 * 2560 * 3072 * 1024 * 12);
}

const BenchCase* FindCase(const std::vector<BenchCase>& cases, const std::string& label) {
  for (const BenchCase& c : cases) {
    if (c.label == label) return &c;
  }
  return nullptr;
}

TEST(SuitesTest, S2HasTheEpiloguesCublasLtCannotFuse) {
  const std::vector<BenchCase> s2 = *MakeSuite("S2");
  struct Row {
    const char* label;
    DataType type;
    int64_t m, n, k;
    Activation act;
  };
  const Row rows[] = {
      {"bf16 2048x2048x512 silu", DataType::kBF16, 2048, 512, 2048, Activation::kSilu},
      {"f16 256x4096x1024 gelu_erf", DataType::kF16, 256, 1024, 4096, Activation::kGeluErf},
      {"bf16 4096x4096x4096 silu", DataType::kBF16, 4096, 4096, 4096, Activation::kSilu},
      {"f16 1024x1024x1024 gelu_erf", DataType::kF16, 1024, 1024, 1024, Activation::kGeluErf},
  };
  for (const Row& row : rows) {
    const BenchCase* c = FindCase(s2, row.label);
    ASSERT_NE(c, nullptr) << row.label;
    EXPECT_EQ(c->problem.a.type, row.type);
    EXPECT_EQ(c->problem.d.type, row.type);
    EXPECT_EQ(c->problem.m, row.m);
    EXPECT_EQ(c->problem.n, row.n);
    EXPECT_EQ(c->problem.k, row.k);
    EXPECT_EQ(c->problem.b.layout, Layout::kColMajor);  // nn.Linear's weight
    EXPECT_EQ(c->problem.epilogue.bias, BiasMode::kPerColumn);
    EXPECT_EQ(c->problem.epilogue.activation, row.act);
    // No Lt column: GELU_BIAS is tanh-GELU only, and there is no SiLU epilogue.
    EXPECT_EQ(c->impls,
              (std::vector<Impl>{Impl::kCublasMm, Impl::kAddmmAct, Impl::kJit, Impl::kAuto}))
        << row.label;
  }
  // The ReLU rows keep their labels: results stay comparable across runs.
  EXPECT_NE(FindCase(s2, "f16 1024x1024x1024"), nullptr);
  EXPECT_NE(FindCase(s2, "bf16 4096x4096x4096"), nullptr);
}

TEST(SuitesTest, S6HasCubesAndMidSizeLinears) {
  const std::vector<BenchCase> s6 = *MakeSuite("S6");
  for (const char* label : {"bf16 8192x8192x8192", "f16 4096x4096x4096", "bf16 4096x4096x4096",
                            "f16 6144x6144x6144", "bf16 6144x6144x6144"}) {
    const BenchCase* c = FindCase(s6, label);
    ASSERT_NE(c, nullptr) << label;
    EXPECT_EQ(c->problem.m, c->problem.n);
    EXPECT_EQ(c->problem.k, c->problem.n);
    EXPECT_EQ(c->rotate, 1);
  }
  for (int64_t n : {4096, 14336}) {
    for (int64_t m : {128, 256, 512}) {
      const std::string label = absl::StrCat("bf16 M=", m, " N=", n, " K=4096");
      const BenchCase* c = FindCase(s6, label);
      ASSERT_NE(c, nullptr) << label;
      EXPECT_EQ(c->problem.a.type, DataType::kBF16);
      EXPECT_EQ(c->problem.m, m);
      EXPECT_EQ(c->problem.n, n);
      EXPECT_EQ(c->problem.k, 4096);
      EXPECT_EQ(c->problem.b.layout, Layout::kColMajor);  // x W^T
      EXPECT_EQ(c->problem.b.ld, 4096);
      EXPECT_GT(c->rotate, 1) << "W would sit in L2";
      EXPECT_EQ(c->impls, (std::vector<Impl>{Impl::kCublasMm, Impl::kJit, Impl::kAuto}));
    }
  }
}

TEST(SuitesTest, ColumnsFollowTheEpilogue) {
  GemmProblem p;
  p.m = p.n = p.k = 64;
  EXPECT_EQ(ColumnsFor(p), (std::vector<Impl>{Impl::kCublasMm, Impl::kJit, Impl::kAuto}));
  p.epilogue.bias = BiasMode::kPerColumn;
  EXPECT_EQ(ColumnsFor(p),
            (std::vector<Impl>{Impl::kCublasMm, Impl::kAddmmAct, Impl::kJit, Impl::kAuto}));
  p.epilogue.activation = Activation::kGeluTanh;
  EXPECT_TRUE(LtFusesEpilogue(p));
  EXPECT_EQ(ColumnsFor(p), (std::vector<Impl>{Impl::kCublasMm, Impl::kAddmmAct, Impl::kLtBiasAct,
                                              Impl::kJit, Impl::kAuto}));
  p.epilogue.activation = Activation::kGeluErf;
  EXPECT_FALSE(LtFusesEpilogue(p));
  p.epilogue.activation = Activation::kRelu;
  p.epilogue.bias = BiasMode::kPerRow;
  EXPECT_FALSE(LtFusesEpilogue(p));
  p.epilogue.bias = BiasMode::kNone;
  EXPECT_FALSE(LtFusesEpilogue(p));  // RELU alone is not RELU_BIAS
  EXPECT_EQ(ColumnsFor(p),
            (std::vector<Impl>{Impl::kCublasMm, Impl::kAddmmAct, Impl::kJit, Impl::kAuto}));
  // Lt has no gated epilogue, whatever the activation.
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.bias = BiasMode::kPerColumn;
  p.epilogue.activation = Activation::kGeluTanh;
  EXPECT_FALSE(LtFusesEpilogue(p));
  EXPECT_EQ(ColumnsFor(p),
            (std::vector<Impl>{Impl::kCublasMm, Impl::kAddmmAct, Impl::kJit, Impl::kAuto}));
}

TEST(SuitesTest, ColumnNamesRoundTripAndOldNamesStillParse) {
  for (Impl impl : kAllImpls) EXPECT_EQ(ImplFromName(ImplName(impl)), impl) << ImplName(impl);
  EXPECT_STREQ(ImplName(Impl::kAddmmAct), "addmm_act");
  EXPECT_STREQ(ImplName(Impl::kLtBiasAct), "lt_bias_act");
  EXPECT_EQ(ImplFromName("addmm_relu"), Impl::kAddmmAct);
  EXPECT_EQ(ImplFromName("lt_relu_bias"), Impl::kLtBiasAct);
  EXPECT_EQ(ImplFromName("cublas"), std::nullopt);
  EXPECT_EQ(ImplFromName(""), std::nullopt);
}

TEST(SuitesTest, CaseOptionsPreferTheCaseThenTheTuningFlag) {
  BenchCase c;
  Options run;
  run.tuning = TuningPolicy::kHeuristic;
  run.pdl = true;
  EXPECT_EQ(CaseOptions(c, run, std::nullopt).tuning, TuningPolicy::kHeuristic);
  Options own;
  own.tuning = TuningPolicy::kFast;
  own.pdl = false;
  c.options = own;
  EXPECT_EQ(CaseOptions(c, run, std::nullopt).tuning, TuningPolicy::kFast);
  EXPECT_FALSE(CaseOptions(c, run, std::nullopt).pdl);
  EXPECT_EQ(CaseOptions(c, run, TuningPolicy::kExhaustive).tuning, TuningPolicy::kExhaustive);
  EXPECT_FALSE(CaseOptions(c, run, TuningPolicy::kExhaustive).pdl);
}

}  // namespace
}  // namespace jitgemm::bench
