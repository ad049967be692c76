#include "jitgemm/problem.h"

#include <cstdint>
#include <functional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace jitgemm {
namespace {

using ::jitgemm::support::IsOk;
using ::jitgemm::support::StatusIs;
using ::testing::HasSubstr;

GemmProblem Valid() { return MakeGemm(64, 128, 256, DataType::kF16); }

// The grouped linear of seed 001: x (B, G, Din) -> y (B, G, Dout), one weight per group.
GemmProblem Grouped(int64_t batch_rows, int64_t groups, int64_t din, int64_t dout) {
  GemmProblem p;
  p.m = batch_rows;
  p.n = dout;
  p.k = din;
  p.batch_count = groups;
  p.a = {DataType::kBF16, Layout::kRowMajor, groups * din, din};
  p.b = {DataType::kBF16, Layout::kColMajor, din, din * dout};
  p.d = {DataType::kBF16, Layout::kRowMajor, groups * dout, dout};
  return p;
}

TEST(ValidateProblemTest, AcceptsPlainAndGroupedProblems) {
  EXPECT_THAT(ValidateProblem(Valid()), IsOk());
  EXPECT_THAT(ValidateProblem(Grouped(2560, 12, 1024, 3072)), IsOk());
  GemmProblem broadcast = Valid();
  broadcast.batch_count = 4;
  broadcast.a.batch_stride = 64 * 256;
  broadcast.b.batch_stride = 0;  // one weight for every batch
  broadcast.d.batch_stride = 64 * 128;
  EXPECT_THAT(ValidateProblem(broadcast), IsOk());
}

struct InvalidCase {
  std::string name;
  std::function<void(GemmProblem&)> mutate;
  std::string field;
};

class InvalidProblemTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidProblemTest, NamesTheField) {
  GemmProblem p = Valid();
  GetParam().mutate(p);
  EXPECT_THAT(ValidateProblem(p),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(GetParam().field)));
}

INSTANTIATE_TEST_SUITE_P(
    AllFields, InvalidProblemTest,
    ::testing::Values(
        InvalidCase{"ZeroM", [](GemmProblem& p) { p.m = 0; }, "m:"},
        InvalidCase{"NegativeN", [](GemmProblem& p) { p.n = -3; }, "n:"},
        InvalidCase{"ZeroK", [](GemmProblem& p) { p.k = 0; }, "k:"},
        InvalidCase{"HugeM", [](GemmProblem& p) { p.m = int64_t{1} << 33; }, "m, n, k"},
        InvalidCase{"ZeroBatch", [](GemmProblem& p) { p.batch_count = 0; }, "batch_count"},
        InvalidCase{"LdaTooSmall", [](GemmProblem& p) { p.a.ld = 100; }, "lda"},
        InvalidCase{"LdaNegative", [](GemmProblem& p) { p.a.ld = -1; }, "lda"},
        InvalidCase{"LdbTooSmallColMajor",
                    [](GemmProblem& p) {
                      p.b.layout = Layout::kColMajor;
                      p.b.ld = 128;
                    },
                    "ldb"},
        InvalidCase{"LdcTooSmallWhenRead",
                    [](GemmProblem& p) {
                      p.epilogue.beta = 1.f;
                      p.c.ld = 5;
                    },
                    "ldc"},
        InvalidCase{"LddTooSmall", [](GemmProblem& p) { p.d.ld = 127; }, "ldd"},
        InvalidCase{"IndexOverflow",
                    [](GemmProblem& p) {
                      p.m = 70000;
                      p.k = 40000;
                    },
                    "32-bit index overflow"},
        InvalidCase{"BatchWithoutStride", [](GemmProblem& p) { p.batch_count = 2; }, "stride_a"},
        InvalidCase{"BatchMissingStrideD",
                    [](GemmProblem& p) {
                      p.batch_count = 2;
                      p.a.batch_stride = 0;
                      p.b.batch_stride = 0;
                    },
                    "stride_d"},
        InvalidCase{"NegativeStride",
                    [](GemmProblem& p) {
                      p.batch_count = 2;
                      p.a.batch_stride = -5;
                    },
                    "stride_a"},
        InvalidCase{"OutputBatchesOverlap",
                    [](GemmProblem& p) {
                      p.batch_count = 2;
                      p.a.batch_stride = p.b.batch_stride = 0;
                      p.d.batch_stride = 0;
                    },
                    "stride_d"},
        InvalidCase{"MixedInputTypes", [](GemmProblem& p) { p.b.type = DataType::kBF16; },
                    "b.type"},
        InvalidCase{"F32InputHalfOutput",
                    [](GemmProblem& p) {
                      p.a.type = p.b.type = DataType::kF32;
                      p.d.type = DataType::kF16;
                    },
                    "d.type"},
        InvalidCase{"UnknownType", [](GemmProblem& p) { p.a.type = static_cast<DataType>(7); },
                    "a.type"},
        InvalidCase{"UnknownLayout", [](GemmProblem& p) { p.d.layout = static_cast<Layout>(9); },
                    "d.layout"},
        InvalidCase{"UnknownActivation",
                    [](GemmProblem& p) { p.epilogue.activation = static_cast<Activation>(42); },
                    "epilogue.activation"},
        InvalidCase{"UnknownBias",
                    [](GemmProblem& p) { p.epilogue.bias = static_cast<BiasMode>(3); },
                    "epilogue.bias"},
        InvalidCase{"NegativeBiasStride",
                    [](GemmProblem& p) {
                      p.epilogue.bias = BiasMode::kPerColumn;
                      p.epilogue.bias_batch_stride = -1;
                    },
                    "bias_batch_stride"},
        InvalidCase{"NanAlpha", [](GemmProblem& p) { p.epilogue.alpha = 0.f / 0.f; }, "alpha"},
        InvalidCase{"UnknownGate", [](GemmProblem& p) { p.epilogue.gate = static_cast<Gate>(2); },
                    "epilogue.gate"},
        // A gated B has 2N = 256 columns: a row-major ld of 128 holds only one half.
        InvalidCase{"GatedLdbHoldsOneHalf",
                    [](GemmProblem& p) {
                      p.epilogue.gate = Gate::kHalves;
                      p.b.ld = 128;
                    },
                    "ldb"},
        InvalidCase{"GatedReadsC",
                    [](GemmProblem& p) {
                      p.epilogue.gate = Gate::kHalves;
                      p.epilogue.beta = 1.f;
                    },
                    "epilogue.beta"},
        InvalidCase{"GatedPerRowBias",
                    [](GemmProblem& p) {
                      p.epilogue.gate = Gate::kHalves;
                      p.epilogue.bias = BiasMode::kPerRow;
                    },
                    "epilogue.bias"},
        InvalidCase{"GatedTwoNOverflows",
                    [](GemmProblem& p) {
                      p.epilogue.gate = Gate::kHalves;
                      p.m = 1;
                      p.k = 1;
                      p.n = int64_t{1} << 30;
                    },
                    "2N"}),
    [](const ::testing::TestParamInfo<InvalidCase>& info) { return info.param.name; });

TEST(GatedProblemTest, BHasTwoHalvesOfNColumns) {
  GemmProblem p = MakeGemm(16, 4096, 1024, DataType::kBF16);
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.activation = Activation::kSilu;
  p.epilogue.bias = BiasMode::kPerColumn;
  EXPECT_THAT(ValidateProblem(p), IsOk());
  EXPECT_EQ(BColumns(p), 8192);
  EXPECT_EQ(Canonicalize(p).b.ld, 8192);
  p.b.layout = Layout::kColMajor;  // torch.cat([W_gate, W_up]) of (N, K) weights
  EXPECT_EQ(Canonicalize(p).b.ld, 1024);
  EXPECT_EQ(Canonicalize(p).d.ld, 4096);
  EXPECT_THAT(DebugString(Canonicalize(p)), HasSubstr("silu gate=halves"));
  p.epilogue.gate = Gate::kNone;
  EXPECT_EQ(BColumns(p), 4096);
}

TEST(CanonicalizeTest, FillsPackedLeadingDimensions) {
  GemmProblem p = Valid();
  p.b.layout = Layout::kColMajor;
  GemmProblem c = Canonicalize(p);
  EXPECT_EQ(c.a.ld, 256);  // row-major M x K: K
  EXPECT_EQ(c.b.ld, 256);  // col-major K x N: K
  EXPECT_EQ(c.d.ld, 128);
}

TEST(CanonicalizeTest, UnreadCDoesNotSplitProblems) {
  GemmProblem x = Valid(), y = Valid();
  y.c.type = DataType::kF32;
  y.c.layout = Layout::kColMajor;
  EXPECT_EQ(DebugString(Canonicalize(x)), DebugString(Canonicalize(y)));
  EXPECT_EQ(Canonicalize(y).c.type, DataType::kF16);
}

TEST(DebugStringTest, NamesEpilogue) {
  GemmProblem p = Valid();
  p.epilogue.bias = BiasMode::kPerColumn;
  p.epilogue.activation = Activation::kGeluErf;
  EXPECT_THAT(DebugString(p), HasSubstr("bias_col gelu_erf"));
}

}  // namespace
}  // namespace jitgemm
