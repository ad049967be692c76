#include "jit/nvrtc_compiler.h"

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/candidates.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "jit/specializer.h"
#include "support/status_matchers.h"

namespace jitgemm::jit {
namespace {

using ::jitgemm::support::StatusIs;
using ::testing::HasSubstr;

TEST(ParsePtxasReportTest, ReadsRegistersAndSpills) {
  CompiledKernel k;
  ParsePtxasReport(
      "ptxas info    : Function properties for _Z1K\n"
      "    8 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers\n",
      &k);
  EXPECT_EQ(k.registers, 168);
  EXPECT_EQ(k.spill_store_bytes, 12);
  EXPECT_EQ(k.spill_load_bytes, 16);
  EXPECT_EQ(k.stack_bytes, 8);
}

TEST(CompileTest, ErrorCarriesTheNvrtcLog) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  CompileRequest r{"template <class T> __global__ void K() { undeclared_thing(); }\n", "broken",
                   "K<int>", "sm_80"};
  EXPECT_THAT(Compile(r), StatusIs(absl::StatusCode::kInternal, HasSubstr("undeclared_thing")));
}

TEST(CompileTest, RejectsUnknownArch) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  CompileRequest r{"template <class T> __global__ void K() {}\n", "k", "K<int>", "sm_1"};
  EXPECT_FALSE(Compile(r).ok());
}

// Problems that exercise every family's shipped configs: the issue's "every
// kernel config the library ships compiles for sm_80 and sm_90a with zero spills".
std::vector<GemmProblem> RepresentativeProblems() {
  std::vector<GemmProblem> out;
  for (DataType t : {DataType::kF16, DataType::kBF16, DataType::kF32}) {
    for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{1, 2048, 4096},
                                                              {16, 4096, 4096},
                                                              {12, 2048, 4096},
                                                              {48, 2048, 4096},
                                                              {64, 128, 256},
                                                              {1024, 1024, 1024},
                                                              {4096, 4096, 4096},
                                                              {37, 101, 77}}) {
      GemmProblem p = MakeGemm(m, n, k, t);
      p.b.layout = Layout::kColMajor;
      p.epilogue.bias = BiasMode::kPerColumn;
      p.epilogue.activation = Activation::kRelu;
      out.push_back(Canonicalize(p));
    }
  }
  // x staged by element loads: a column-major A along m (16 rows) and along k
  // (4 rows), and row-major A rows that do not start on 16 bytes.
  for (auto [m, col_a, lda] : std::vector<std::tuple<int64_t, bool, int64_t>>{
           {16, true, 16}, {4, true, 5}, {16, false, 4097}}) {
    GemmProblem p = MakeGemm(m, 4096, 4096, DataType::kBF16);
    p.a.layout = col_a ? Layout::kColMajor : Layout::kRowMajor;
    p.a.ld = lda;
    p.b.layout = Layout::kColMajor;
    p.epilogue.bias = BiasMode::kPerRow;
    p.epilogue.beta = 1.f;
    p.epilogue.activation = Activation::kSilu;
    out.push_back(Canonicalize(p));
  }
  return out;
}

TEST(ShippedConfigsTest, CompileForSm80AndSm90aWithoutSpills) {
  if (!NvrtcVersion().ok()) GTEST_SKIP() << "NVRTC not available: " << NvrtcVersion().status();
  Options options;
  options.tuning = TuningPolicy::kFast;  // what the heuristic and fast policies can pick
  std::set<std::string> done;
  int compiled = 0;
  for (const char* arch : {"sm_80", "sm_90a"}) {
    const int sm = *ParseArch(arch);
    const TargetInfo target = OfflineTarget(sm);
    for (const GemmProblem& p : RepresentativeProblems()) {
      // constant_b adds the early-weight small_m kernels.
      std::vector<KernelConfig> configs = ProposeConfigs(p, target, options);
      Options constant_b = options;
      constant_b.constant_b = true;
      for (const KernelConfig& c : ProposeConfigs(p, target, constant_b)) configs.push_back(c);
      for (const KernelConfig& c : configs) {
        const KernelFamily& f = GetFamily(c.family);
        // One compile per (family, config, dtype, arch, how A is read): the tile and
        // the x path decide registers.
        const std::string id = std::string(arch) + c.ToString() + DataTypeName(p.a.type) +
                               (p.m <= 64 ? "small" : "big") +
                               (p.a.layout == Layout::kColMajor ? "colA" : "") +
                               ((p.a.ld * DataTypeSize(p.a.type)) % 16 != 0 ? "oddA" : "");
        if (!done.insert(id).second) continue;
        KernelSource s = Specialize(p, c, f, f.Shape(p, c, target), 16);
        auto k = Compile({s.source, s.kernel_name, s.name_expression, arch});
        ASSERT_TRUE(k.ok()) << k.status();
        ++compiled;
        EXPECT_GT(k->registers, 0) << s.kernel_name;
        EXPECT_EQ(k->spill_store_bytes + k->spill_load_bytes, 0)
            << s.kernel_name << " " << arch << " spills:\n"
            << k->log;
        RecordProperty(s.kernel_name + "_" + arch, k->registers);
      }
    }
  }
  // The elementwise pass after cuBLAS, per type, layout and activation.
  for (const GemmProblem& base : RepresentativeProblems()) {
    for (Layout layout : {Layout::kRowMajor, Layout::kColMajor}) {
      GemmProblem p = base;
      p.d.layout = layout;
      p.d.ld = 0;
      p.epilogue.activation = Activation::kGeluErf;
      p = Canonicalize(p);
      const KernelFamily& f = GetFamily(Family::kElementwise);
      KernelConfig c = f.Candidates(p, OfflineTarget(90), TuningPolicy::kHeuristic).front();
      KernelSource s = Specialize(p, c, f, f.Shape(p, c, OfflineTarget(90)), 16);
      auto k = Compile({s.source, s.kernel_name, s.name_expression, "sm_90a"});
      ASSERT_TRUE(k.ok()) << k.status();
      EXPECT_EQ(k->spill_store_bytes + k->spill_load_bytes, 0) << s.kernel_name;
      ++compiled;
    }
  }
  EXPECT_GT(compiled, 0);
  std::printf("compiled %d shipped configs, zero spills checked\n", compiled);
}

}  // namespace
}  // namespace jitgemm::jit
