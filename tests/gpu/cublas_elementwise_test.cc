// The cuBLAS route for epilogues cuBLASLt lacks: Lt's product (with its BIAS
// epilogue where the bias lies on Lt's axis) and the JIT elementwise pass,
// through Plan with BackendPolicy::kCublasOnly, against the float64
// reference. Every activation and bias mode, f16 / bf16 / f32 D, row- and
// column-major D, lines that take 16-byte chunks, narrower ones, odd ld
// (the scalar kernel), tails, batches and element-aligned pointers; and the
// same product with Lt's ReLU / GELU left to the pass.
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cublas_backend.h"
#include "backends/elementwise_epilogue.h"
#include "gtest/gtest.h"
#include "jitgemm/plan.h"
#include "support/gpu_env.h"
#include "tests/gpu/gpu_case.h"

namespace jitgemm::support {
namespace {

struct Shape {
  int64_t m, n, k;
  int64_t pad;  // ld = line length + pad
};

// Line lengths a multiple of 8 (no tail), with a tail, and odd lds.
constexpr Shape kShapes[] = {{64, 200, 48, 0}, {19, 100, 40, 4}, {37, 70, 33, 7}, {96, 24, 72, 1}};

Case ElementwiseCase(DataType in, DataType out, Layout d_layout, BiasMode bias, Activation act,
                     int index) {
  const Shape& s = kShapes[index % std::size(kShapes)];
  Case c;
  GemmProblem& p = c.problem;
  p = MakeGemm(s.m, s.n, s.k, in);
  p.a.ld = s.k;
  p.b.layout = Layout::kColMajor;
  p.b.ld = s.k;
  p.d.type = out;
  p.d.layout = d_layout;
  p.d.ld = (d_layout == Layout::kRowMajor ? s.n : s.m) + s.pad;
  p.c = p.d;
  p.epilogue.bias = bias;
  p.epilogue.activation = act;
  p.epilogue.alpha = index % 3 == 0 ? 0.5f : 1.0f;
  if (index % 4 == 1) {
    p.epilogue.beta = 0.75f;  // Lt applies beta before its bias and the pass
  }
  if (index % 5 == 2) {
    p.batch_count = 3;
    p.a.batch_stride = p.m * p.a.ld;
    p.b.batch_stride = p.n * p.b.ld;
    p.d.batch_stride = (d_layout == Layout::kRowMajor ? p.m : p.n) * p.d.ld;
    p.c = p.d;
    p.epilogue.bias_batch_stride = bias == BiasMode::kPerRow ? p.m : p.n;
  }
  c.options.backend = BackendPolicy::kCublasOnly;
  if (index % 7 == 3) {
    c.options.pointer_alignment =
        DataTypeSize(in) > DataTypeSize(out) ? DataTypeSize(out) : DataTypeSize(in);
    c.misalign = true;
  }
  c.problem = Canonicalize(p);
  c.tag = absl::StrCat("#", index);
  return c;
}

// Input and output types of every case: Lt's type pairs.
constexpr std::pair<DataType, DataType> kTypes[] = {{DataType::kF16, DataType::kF16},
                                                    {DataType::kBF16, DataType::kBF16},
                                                    {DataType::kBF16, DataType::kF32},
                                                    {DataType::kF32, DataType::kF32}};

// The part of the plan's name after "+ ": the elementwise pass.
std::string PassName(const std::string& kernel_name) {
  const size_t at = kernel_name.find(" + ");
  return at == std::string::npos ? "" : kernel_name.substr(at + 3);
}

TEST(CublasElementwiseTest, MatchesFloat64Reference) {
  JITGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(20261124);
  int index = 0, failures = 0, lt_bias = 0, pass_bias = 0;
  for (const auto& [in, out] : kTypes) {
    for (Layout layout : {Layout::kRowMajor, Layout::kColMajor}) {
      for (BiasMode bias : {BiasMode::kNone, BiasMode::kPerColumn, BiasMode::kPerRow}) {
        for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kGeluTanh,
                               Activation::kGeluErf, Activation::kSilu}) {
          const Case c = ElementwiseCase(in, out, layout, bias, act, index++);
          auto plan = Plan::Create(c.problem, c.options);
          if (!plan.ok()) {
            ADD_FAILURE() << c.tag << " " << DebugString(c.problem) << ": " << plan.status();
            ++failures;
            continue;
          }
          const std::string& name = plan->info().kernel_name;
          const std::string pass = PassName(name);
          // The split: a bias on Lt's axis (per column of row-major D, per
          // row of column-major D) is Lt's; the pass adds only the other.
          const bool on_lt_axis = (bias == BiasMode::kPerColumn) == (layout == Layout::kRowMajor);
          const bool needs_pass = act == Activation::kGeluErf || act == Activation::kSilu ||
                                  (bias != BiasMode::kNone && !on_lt_axis);
          if (needs_pass) {
            EXPECT_FALSE(pass.empty()) << c.tag << " " << name;
          } else if (!pass.empty()) {
            // Only where Lt has no algorithm for its fused epilogue.
            EXPECT_NE(name.find("cublasLt DEFAULT"), std::string::npos) << c.tag << " " << name;
          }
          if (needs_pass && bias != BiasMode::kNone) {
            const bool pass_adds = pass.find("_bias_") != std::string::npos;
            // Lt may lack a BIAS algorithm for a type pair; then the pass adds it.
            if (on_lt_axis && !pass_adds) {
              EXPECT_NE(name.find("cublasLt BIAS"), std::string::npos) << c.tag << " " << name;
              ++lt_bias;
            }
            if (!on_lt_axis) {
              EXPECT_TRUE(pass_adds) << c.tag << " " << name;
            }
            if (pass_adds) ++pass_bias;
          }
          const std::string err = RunCase(c, *plan, rng);
          if (!err.empty()) {
            ++failures;
            if (!ReportCaseFailure(c, plan->problem(), name, err)) return;
          }
        }
      }
    }
  }
  std::printf("cublas + elementwise: %d problems, %d failed; bias by Lt %d, by the pass %d\n",
              index, failures, lt_bias, pass_bias);
  EXPECT_GT(lt_bias, 0);
  EXPECT_EQ(failures, 0);
}

// The route the tuner times beside Lt's fused ReLU / GELU: Lt's product
// (with its BIAS where the bias lies on Lt's axis) and the activation in the
// pass. Same cases as above for the activations Lt has.
TEST(CublasElementwiseTest, ActivationInThePassMatchesFloat64Reference) {
  JITGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(20261129);
  int index = 0, failures = 0, moved = 0;
  for (const auto& [in, out] : kTypes) {
    for (Layout layout : {Layout::kRowMajor, Layout::kColMajor}) {
      for (BiasMode bias : {BiasMode::kNone, BiasMode::kPerColumn, BiasMode::kPerRow}) {
        for (Activation act : {Activation::kRelu, Activation::kGeluTanh}) {
          const Case c = ElementwiseCase(in, out, layout, bias, act, index++);
          auto backend = CreateCublasBackend(c.problem, c.options, MakeJitElementwiseEpilogue,
                                             /*algorithm=*/0, /*activation_in_pass=*/true);
          const bool on_lt_axis = (bias == BiasMode::kPerColumn) == (layout == Layout::kRowMajor);
          if (bias != BiasMode::kNone && !on_lt_axis) {
            // The pass already adds that bias and activates: nothing to move.
            EXPECT_TRUE(absl::IsNotFound(backend.status())) << c.tag << " " << backend.status();
            continue;
          }
          if (!backend.ok()) {
            ADD_FAILURE() << c.tag << " " << DebugString(c.problem) << ": " << backend.status();
            ++failures;
            continue;
          }
          const std::string name = (*backend)->Describe();
          const std::string pass = PassName(name);
          EXPECT_FALSE(pass.empty()) << c.tag << " " << name;
          if (pass.find("_bias_") != std::string::npos) {
            // Only where Lt has no BIAS algorithm for the type pair.
            EXPECT_NE(name.find("cublasLt DEFAULT"), std::string::npos) << c.tag << " " << name;
          }
          EXPECT_EQ(name.find("RELU"), std::string::npos) << c.tag << " " << name;
          EXPECT_EQ(name.find("GELU"), std::string::npos) << c.tag << " " << name;
          ++moved;
          const std::string err = RunCase(
              c, c.problem,
              [&](const GemmPointers& ptrs) { return (*backend)->Run(ptrs, nullptr); }, rng);
          if (!err.empty()) {
            ++failures;
            if (!ReportCaseFailure(c, c.problem, name, err)) return;
          }
        }
      }
    }
  }
  std::printf("cublas + activation pass: %d problems run, %d failed\n", moved, failures);
  EXPECT_GT(moved, 20);
  EXPECT_EQ(failures, 0);
  // SiLU has no Lt epilogue to move the activation out of.
  Case silu = ElementwiseCase(DataType::kBF16, DataType::kBF16, Layout::kRowMajor,
                              BiasMode::kPerColumn, Activation::kSilu, 0);
  auto none = CreateCublasBackend(silu.problem, silu.options, MakeJitElementwiseEpilogue, 0, true);
  EXPECT_TRUE(absl::IsNotFound(none.status())) << none.status();
}

}  // namespace
}  // namespace jitgemm::support
