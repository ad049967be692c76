// The elementwise family (the pass after a cuBLAS product): its chunk width
// rule, what it refuses, its grid-stride launch, and that every variant
// compiles through NVRTC for sm_90a without spills.
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/families/elementwise.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "jit/nvrtc_compiler.h"
#include "jit/specializer.h"
#include "support/status_matchers.h"

namespace jitgemm::jit {
namespace {

using ::jitgemm::support::IsOk;
using ::jitgemm::support::StatusIs;
using ::testing::HasSubstr;

const KernelFamily& Elementwise() { return GetFamily(Family::kElementwise); }

// A canonical m x n problem whose D has `type`, `layout` and leading dimension `ld`.
GemmProblem WithD(int64_t m, int64_t n, DataType type, Layout layout, int64_t ld) {
  GemmProblem p = MakeGemm(m, n, 64, type);
  p.d.layout = layout;
  p.d.ld = ld;
  p.c = p.d;
  return Canonicalize(p);
}

KernelConfig Config(const GemmProblem& p, int width) {
  KernelConfig c = Elementwise().Candidates(p, OfflineTarget(90), TuningPolicy::kHeuristic).at(0);
  c.block_n = width;
  return c;
}

TEST(ElementwiseWidthTest, SixteenBytesWhereLinesAreAligned) {
  EXPECT_EQ(ElementwiseWidth(WithD(2048, 512, DataType::kBF16, Layout::kRowMajor, 512), 16), 8);
  EXPECT_EQ(ElementwiseWidth(WithD(256, 1024, DataType::kF16, Layout::kRowMajor, 1024), 16), 8);
  EXPECT_EQ(ElementwiseWidth(WithD(64, 64, DataType::kF32, Layout::kRowMajor, 64), 16), 4);
  // Column-major D: the lines are columns, ld counts rows.
  EXPECT_EQ(ElementwiseWidth(WithD(64, 3, DataType::kBF16, Layout::kColMajor, 72), 16), 8);
  // One line: only the pointer matters.
  EXPECT_EQ(ElementwiseWidth(WithD(1, 37, DataType::kF16, Layout::kRowMajor, 37), 16), 8);
}

TEST(ElementwiseWidthTest, NarrowerForOddLdAndWeakPointers) {
  EXPECT_EQ(ElementwiseWidth(WithD(8, 37, DataType::kF16, Layout::kRowMajor, 37), 16), 1);
  EXPECT_EQ(ElementwiseWidth(WithD(8, 36, DataType::kF16, Layout::kRowMajor, 36), 16), 4);
  EXPECT_EQ(ElementwiseWidth(WithD(8, 34, DataType::kBF16, Layout::kRowMajor, 34), 16), 2);
  EXPECT_EQ(ElementwiseWidth(WithD(8, 34, DataType::kF32, Layout::kRowMajor, 34), 16), 2);
  EXPECT_EQ(ElementwiseWidth(WithD(8, 33, DataType::kF32, Layout::kRowMajor, 33), 16), 1);
  // Options::pointer_alignment bounds it whatever ld says.
  EXPECT_EQ(ElementwiseWidth(WithD(8, 64, DataType::kBF16, Layout::kRowMajor, 64), 8), 4);
  EXPECT_EQ(ElementwiseWidth(WithD(8, 64, DataType::kBF16, Layout::kRowMajor, 64), 4), 2);
  EXPECT_EQ(ElementwiseWidth(WithD(8, 64, DataType::kBF16, Layout::kRowMajor, 64), 2), 1);
  EXPECT_EQ(ElementwiseWidth(WithD(8, 64, DataType::kF32, Layout::kRowMajor, 64), 4), 1);
}

TEST(ElementwiseWidthTest, BatchStrideBoundsIt) {
  GemmProblem p = MakeGemm(4, 64, 64, DataType::kBF16);
  p.batch_count = 3;
  p.a.batch_stride = 4 * 64;
  p.d.batch_stride = 4 * 64 + 4;  // 8-byte aligned batch starts
  p.c = p.d;
  EXPECT_EQ(ElementwiseWidth(Canonicalize(p), 16), 4);
}

TEST(ElementwiseFamilyTest, CandidateIsTheSixteenByteWidth) {
  const GemmProblem p = WithD(2048, 512, DataType::kBF16, Layout::kRowMajor, 512);
  const KernelConfig c =
      Elementwise().Candidates(p, OfflineTarget(90), TuningPolicy::kHeuristic).at(0);
  EXPECT_EQ(c.block_n, 8);
  EXPECT_EQ(c.warps_m * 32, 256);
  EXPECT_THAT(Elementwise().Supports(p, c, OfflineTarget(90)), IsOk());
}

TEST(ElementwiseFamilyTest, RefusesWidthsTheLayoutDoesNotAlign) {
  const GemmProblem odd = WithD(8, 37, DataType::kF16, Layout::kRowMajor, 37);
  EXPECT_THAT(Elementwise().Supports(odd, Config(odd, 8), OfflineTarget(90)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("block_n")));
  EXPECT_THAT(Elementwise().Supports(odd, Config(odd, 1), OfflineTarget(90)), IsOk());
  const GemmProblem f32 = WithD(8, 64, DataType::kF32, Layout::kRowMajor, 64);
  EXPECT_THAT(Elementwise().Supports(f32, Config(f32, 8), OfflineTarget(90)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("32 bytes")));
  EXPECT_THAT(Elementwise().Supports(f32, Config(f32, 3), OfflineTarget(90)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("power of two")));
}

TEST(ElementwiseFamilyTest, GridStrideLoopFillsTheDeviceOnce) {
  const TargetInfo h100 = OfflineTarget(90);
  // 2048 x 512 bf16 in 16-byte chunks: 131072 chunks, 512 blocks of 256.
  GemmProblem p = WithD(2048, 512, DataType::kBF16, Layout::kRowMajor, 512);
  LaunchShape s = Elementwise().Shape(p, Config(p, 8), h100);
  EXPECT_EQ(s.grid[0], 512u);
  EXPECT_EQ(s.grid[1], 1u);
  EXPECT_EQ(s.block[0], 256u);
  // 8192 x 14336: far more chunks than the device holds; 8 blocks an SM.
  p = WithD(8192, 14336, DataType::kBF16, Layout::kRowMajor, 14336);
  s = Elementwise().Shape(p, Config(p, 8), h100);
  EXPECT_EQ(s.grid[0], static_cast<uint32_t>(h100.multiprocessors * 8));
  // A line's tail is a chunk of its own: 37 = 4 chunks of 8 and 1 of 5, 3 lines.
  p = WithD(3, 37, DataType::kF16, Layout::kRowMajor, 40);
  s = Elementwise().Shape(p, Config(p, 8), h100);
  EXPECT_EQ(s.grid[0], 1u);
  // Batches, lines beyond the old 65535-line grid limit.
  p = WithD(100000, 8, DataType::kF32, Layout::kRowMajor, 8);
  EXPECT_THAT(Elementwise().Supports(p, Config(p, 4), h100), IsOk());
}

TEST(ElementwiseFamilyTest, KernelNameSaysTheWidth) {
  const GemmProblem p = WithD(64, 64, DataType::kBF16, Layout::kRowMajor, 64);
  const KernelSource vec = SpecializeFor(p, Config(p, 8), OfflineTarget(90), 16);
  const KernelSource scalar = SpecializeFor(p, Config(p, 1), OfflineTarget(90), 16);
  EXPECT_THAT(vec.kernel_name, HasSubstr("_1x8x1_"));
  EXPECT_THAT(scalar.kernel_name, HasSubstr("_1x1x1_"));
  EXPECT_THAT(vec.source, HasSubstr("kBlockN = 8"));
}

// Every kind of variant: type, chunk width (16-byte, narrower, scalar), D's
// layout, tails, bias along and across lines, batched, every activation.
TEST(ElementwiseFamilyTest, VariantsCompileForSm90aWithoutSpills) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  struct Case {
    DataType type;
    Layout layout;
    int64_t m, n, ld;
    int pointer_alignment;
    BiasMode bias;
    Activation act;
    int batch;
  };
  std::vector<Case> cases;
  for (DataType t : {DataType::kF16, DataType::kBF16, DataType::kF32}) {
    for (BiasMode bias : {BiasMode::kNone, BiasMode::kPerColumn, BiasMode::kPerRow}) {
      cases.push_back({t, Layout::kRowMajor, 64, 512, 512, 16, bias, Activation::kSilu, 1});
      cases.push_back({t, Layout::kColMajor, 61, 40, 64, 16, bias, Activation::kGeluErf, 1});
      cases.push_back({t, Layout::kRowMajor, 5, 37, 37, 16, bias, Activation::kSilu, 1});
      cases.push_back({t, Layout::kRowMajor, 5, 40, 40, 8, bias, Activation::kSilu, 2});
    }
  }
  for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kGeluTanh,
                         Activation::kGeluErf, Activation::kSilu}) {
    cases.push_back(
        {DataType::kBF16, Layout::kRowMajor, 2048, 512, 512, 16, BiasMode::kNone, act, 1});
  }
  std::set<int> widths;
  for (const Case& k : cases) {
    GemmProblem p = MakeGemm(k.m, k.n, 64, k.type);
    p.d.layout = k.layout;
    p.d.ld = k.ld;
    p.c = p.d;
    p.epilogue.bias = k.bias;
    p.epilogue.activation = k.act;
    if (k.batch > 1) {
      p.batch_count = k.batch;
      p.a.batch_stride = k.m * 64;
      p.d.batch_stride = k.m * k.ld;
      p.c = p.d;
      p.epilogue.bias_batch_stride = k.bias == BiasMode::kPerRow ? k.m : k.n;
    }
    p = Canonicalize(p);
    KernelConfig c = Config(p, ElementwiseWidth(p, k.pointer_alignment));
    c.pdl = true;
    widths.insert(c.block_n);
    ASSERT_THAT(Elementwise().Supports(p, c, OfflineTarget(90)), IsOk());
    const KernelSource s = SpecializeFor(p, c, OfflineTarget(90), k.pointer_alignment);
    auto compiled = Compile({s.source, s.kernel_name, s.name_expression, "sm_90a"});
    ASSERT_TRUE(compiled.ok()) << s.kernel_name << ": " << compiled.status();
    EXPECT_GT(compiled->registers, 0) << s.kernel_name;
    EXPECT_EQ(compiled->spill_store_bytes + compiled->spill_load_bytes, 0)
        << s.kernel_name << " spills:\n"
        << compiled->log;
  }
  // 16-byte f16/bf16 (8) and f32 (4), 8-byte f16 (4) and f32 (2), scalar (1).
  EXPECT_EQ(widths, (std::set<int>{1, 2, 4, 8}));
}

// The kernel refuses, at compile time, a width the pointer does not promise.
TEST(ElementwiseFamilyTest, WidthBeyondThePointerAlignmentFailsToCompile) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  const GemmProblem p = WithD(64, 64, DataType::kBF16, Layout::kRowMajor, 64);
  const KernelSource s = SpecializeFor(p, Config(p, 8), OfflineTarget(90), 4);
  auto compiled = Compile({s.source, s.kernel_name, s.name_expression, "sm_90a"});
  ASSERT_FALSE(compiled.ok());
  EXPECT_THAT(std::string(compiled.status().message()), HasSubstr("alignment"));
}

}  // namespace
}  // namespace jitgemm::jit
