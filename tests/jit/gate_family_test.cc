// The gate family (the gate pass after a gated problem's cuBLAS product):
// the [gate | up] workspace it reads, its chunk width rule, what it refuses,
// its spec, and that every variant compiles through NVRTC for sm_90a and
// sm_80 without spills.
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/families/gate.h"
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

const KernelFamily& GateFamily() { return GetFamily(Family::kGate); }

// A canonical gated m x n problem (B of 2n columns) whose D has `type`,
// `layout` and leading dimension `ld`.
GemmProblem Gated(int64_t m, int64_t n, DataType type, Layout layout, int64_t ld) {
  GemmProblem p = MakeGemm(m, n, 64, type);
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.activation = Activation::kSilu;
  p.b.ld = 2 * n;
  p.d.layout = layout;
  p.d.ld = ld;
  p.c = p.d;
  return Canonicalize(p);
}

KernelConfig Config(const GemmProblem& p, int width) {
  KernelConfig c = GateFamily().Candidates(p, OfflineTarget(90), TuningPolicy::kHeuristic).at(0);
  c.block_n = width;
  return c;
}

TEST(GateProductTest, PackedInDsOrderWithTheUpHalfAfterTheGateHalf) {
  GemmProblem p = Gated(5, 7, DataType::kBF16, Layout::kRowMajor, 9);
  Operand w = GateProductOperand(p);
  EXPECT_EQ(w.type, DataType::kBF16);
  EXPECT_EQ(w.layout, Layout::kRowMajor);
  EXPECT_EQ(w.ld, 14);
  EXPECT_EQ(w.batch_stride, kNoStride);
  EXPECT_EQ(GateUpOffset(p), 7);
  EXPECT_EQ(GateProductElements(p), 5 * 14);

  p = Gated(5, 7, DataType::kF32, Layout::kColMajor, 8);
  w = GateProductOperand(p);
  EXPECT_EQ(w.layout, Layout::kColMajor);
  EXPECT_EQ(w.ld, 5);
  EXPECT_EQ(GateUpOffset(p), 7 * 5);  // N columns of M

  // Batches back to back, whatever D's batch stride.
  p.batch_count = 3;
  p.a.batch_stride = 5 * 64;
  p.b.batch_stride = 0;
  p.d.batch_stride = 8 * 7 + 4;
  p.c = p.d;
  p = Canonicalize(p);
  w = GateProductOperand(p);
  EXPECT_EQ(w.batch_stride, 5 * 14);
  EXPECT_EQ(GateProductElements(p), 3 * 5 * 14);
}

TEST(GateWidthTest, SixteenBytesWhereDAndBothHalvesAlign) {
  // Seed 001's hidden tensor: (B, G, 3072) bf16 written by group.
  GemmProblem grouped = MakeGemm(2560, 3072, 1024, DataType::kBF16);
  grouped.epilogue.gate = Gate::kHalves;
  grouped.batch_count = 12;
  grouped.a = {DataType::kBF16, Layout::kRowMajor, 12 * 1024, 1024};
  grouped.b = {DataType::kBF16, Layout::kRowMajor, 6144, 1024 * 6144};
  grouped.d = {DataType::kBF16, Layout::kRowMajor, 12 * 3072, 3072};
  EXPECT_EQ(GateWidth(Canonicalize(grouped), 16), 8);
  EXPECT_EQ(GateWidth(Gated(64, 512, DataType::kF32, Layout::kRowMajor, 512), 16), 4);
  EXPECT_EQ(GateWidth(Gated(64, 3, DataType::kF16, Layout::kColMajor, 64), 16), 8);
}

TEST(GateWidthTest, NarrowerWhereDOrTheUpHalfIsNot) {
  // Odd N: the up half starts 2 bytes off, whatever D's ld.
  EXPECT_EQ(GateWidth(Gated(8, 37, DataType::kF16, Layout::kRowMajor, 40), 16), 1);
  EXPECT_EQ(GateWidth(Gated(8, 36, DataType::kF16, Layout::kRowMajor, 36), 16), 4);
  EXPECT_EQ(GateWidth(Gated(8, 34, DataType::kBF16, Layout::kRowMajor, 40), 16), 2);
  // D's ld bounds it when W would allow 16 bytes.
  EXPECT_EQ(GateWidth(Gated(8, 64, DataType::kBF16, Layout::kRowMajor, 68), 16), 4);
  // Column-major: W's columns are M long, the up half N * M elements on.
  EXPECT_EQ(GateWidth(Gated(7, 8, DataType::kBF16, Layout::kColMajor, 8), 16), 1);
  // Options::pointer_alignment bounds it whatever the lines say.
  EXPECT_EQ(GateWidth(Gated(8, 64, DataType::kBF16, Layout::kRowMajor, 64), 8), 4);
  EXPECT_EQ(GateWidth(Gated(8, 64, DataType::kBF16, Layout::kRowMajor, 64), 2), 1);
}

TEST(GateFamilyTest, ServesGatedProblemsOnlyAndTheElementwiseFamilyRefusesThem) {
  const GemmProblem gated = Gated(64, 512, DataType::kBF16, Layout::kRowMajor, 512);
  const std::vector<KernelConfig> configs =
      GateFamily().Candidates(gated, OfflineTarget(90), TuningPolicy::kExhaustive);
  ASSERT_EQ(configs.size(), 1u);
  EXPECT_EQ(configs[0].block_n, 8);
  EXPECT_EQ(configs[0].warps_m * 32, 256);
  EXPECT_THAT(GateFamily().Supports(gated, configs[0], OfflineTarget(90)), IsOk());

  GemmProblem plain = gated;
  plain.epilogue.gate = Gate::kNone;
  plain.b.ld = 512;
  EXPECT_TRUE(GateFamily().Candidates(plain, OfflineTarget(90), TuningPolicy::kHeuristic).empty());
  EXPECT_THAT(GateFamily().Supports(plain, configs[0], OfflineTarget(90)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("epilogue.gate")));

  const KernelFamily& elementwise = GetFamily(Family::kElementwise);
  EXPECT_TRUE(elementwise.Candidates(gated, OfflineTarget(90), TuningPolicy::kHeuristic).empty());
  KernelConfig e = elementwise.Candidates(plain, OfflineTarget(90), TuningPolicy::kHeuristic).at(0);
  EXPECT_THAT(elementwise.Supports(gated, e, OfflineTarget(90)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("epilogue.gate")));
}

TEST(GateFamilyTest, RefusesWidthsTheHalvesDoNotAlign) {
  const GemmProblem odd = Gated(8, 37, DataType::kF16, Layout::kRowMajor, 40);
  EXPECT_THAT(GateFamily().Supports(odd, Config(odd, 4), OfflineTarget(90)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("halves of the product")));
  EXPECT_THAT(GateFamily().Supports(odd, Config(odd, 1), OfflineTarget(90)), IsOk());
  const GemmProblem f32 = Gated(8, 64, DataType::kF32, Layout::kRowMajor, 64);
  EXPECT_THAT(GateFamily().Supports(f32, Config(f32, 8), OfflineTarget(90)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("32 bytes")));
  EXPECT_THAT(GateFamily().Supports(f32, Config(f32, 3), OfflineTarget(90)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("power of two")));
}

TEST(GateFamilyTest, GridStrideLoopOverDsChunks) {
  const TargetInfo h100 = OfflineTarget(90);
  // 2048 x 512 bf16 in 16-byte chunks: 131072 chunks, 512 blocks of 256.
  GemmProblem p = Gated(2048, 512, DataType::kBF16, Layout::kRowMajor, 512);
  LaunchShape s = GateFamily().Shape(p, Config(p, 8), h100);
  EXPECT_EQ(s.grid[0], 512u);
  EXPECT_EQ(s.block[0], 256u);
  // Far more chunks than the device holds: 8 blocks an SM.
  p = Gated(2048, 14336, DataType::kBF16, Layout::kRowMajor, 14336);
  s = GateFamily().Shape(p, Config(p, 8), h100);
  EXPECT_EQ(s.grid[0], static_cast<uint32_t>(h100.multiprocessors * 8));
}

TEST(GateFamilyTest, SpecDescribesTheProduct) {
  const GemmProblem p = Gated(64, 96, DataType::kBF16, Layout::kRowMajor, 104);
  const KernelSource s = SpecializeFor(p, Config(p, 8), OfflineTarget(90), 16);
  EXPECT_THAT(s.kernel_name, HasSubstr("gemm_gate_bf16_"));
  EXPECT_THAT(s.kernel_name, HasSubstr("_silu_glu"));
  EXPECT_THAT(s.source, HasSubstr("kLdw = 192, kStrideW = 0, kUpOffset = 96"));
  EXPECT_THAT(s.source, HasSubstr("kAlignW = 16"));
  EXPECT_THAT(s.source, HasSubstr("jitgemm/epilogue/gate_activation.cuh"));
  EXPECT_EQ(s.name_expression, "jitgemm::epilogue::GateActivation<JitgemmSpec>");
}

// Every kind of variant: type, width (16-byte, narrower, scalar), D's
// layout, odd N (tails and a misaligned up half), bias along and across
// lines, batched with a padded D stride, every activation.
TEST(GateFamilyTest, VariantsCompileWithoutSpills) {
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
    for (BiasMode bias : {BiasMode::kNone, BiasMode::kPerColumn}) {
      cases.push_back({t, Layout::kRowMajor, 64, 512, 512, 16, bias, Activation::kSilu, 1});
      cases.push_back({t, Layout::kColMajor, 64, 40, 72, 16, bias, Activation::kGeluErf, 1});
      cases.push_back({t, Layout::kRowMajor, 5, 37, 37, 16, bias, Activation::kSilu, 1});
      cases.push_back({t, Layout::kRowMajor, 5, 40, 44, 8, bias, Activation::kGeluTanh, 3});
    }
  }
  for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kGeluTanh,
                         Activation::kGeluErf, Activation::kSilu}) {
    cases.push_back(
        {DataType::kBF16, Layout::kRowMajor, 2048, 512, 512, 16, BiasMode::kNone, act, 1});
  }
  std::set<int> widths;
  int compiled_count = 0;
  for (const Case& k : cases) {
    GemmProblem p = Gated(k.m, k.n, k.type, k.layout, k.ld);
    p.epilogue.bias = k.bias;
    p.epilogue.activation = k.act;
    if (k.batch > 1) {
      p.batch_count = k.batch;
      p.a.batch_stride = k.m * 64;
      p.b.batch_stride = 64 * 2 * k.n;
      p.d.batch_stride = k.m * k.ld + 2;
      p.c = p.d;
      p.epilogue.bias_batch_stride = 2 * k.n;
    }
    p = Canonicalize(p);
    ASSERT_THAT(ValidateProblem(p), IsOk());
    KernelConfig c = Config(p, GateWidth(p, k.pointer_alignment));
    c.pdl = true;
    widths.insert(c.block_n);
    ASSERT_THAT(GateFamily().Supports(p, c, OfflineTarget(90)), IsOk());
    for (const char* arch : {"sm_90a", "sm_80"}) {
      const KernelSource s = SpecializeFor(p, c, OfflineTarget(90), k.pointer_alignment);
      auto compiled = Compile({s.source, s.kernel_name, s.name_expression, arch});
      ASSERT_TRUE(compiled.ok()) << s.kernel_name << " " << arch << ": " << compiled.status();
      EXPECT_GT(compiled->registers, 0) << s.kernel_name;
      EXPECT_EQ(compiled->spill_store_bytes + compiled->spill_load_bytes, 0)
          << s.kernel_name << " spills:\n"
          << compiled->log;
      ++compiled_count;
    }
  }
  EXPECT_EQ(widths, (std::set<int>{1, 2, 4, 8}));
  std::printf("compiled %d gate kernels\n", compiled_count);
}

// The kernel refuses, at compile time, a width the pointer does not promise.
TEST(GateFamilyTest, WidthBeyondThePointerAlignmentFailsToCompile) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  const GemmProblem p = Gated(64, 64, DataType::kBF16, Layout::kRowMajor, 64);
  const KernelSource s = SpecializeFor(p, Config(p, 8), OfflineTarget(90), 4);
  auto compiled = Compile({s.source, s.kernel_name, s.name_expression, "sm_90a"});
  ASSERT_FALSE(compiled.ok());
  EXPECT_THAT(std::string(compiled.status().message()), HasSubstr("alignment"));
}

}  // namespace
}  // namespace jitgemm::jit
