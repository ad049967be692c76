#include "jit/specializer.h"

#include <functional>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "jit/source_closure.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

GemmProblem Base() {
  GemmProblem p = MakeGemm(64, 128, 256, DataType::kF16);
  p.epilogue.bias = BiasMode::kPerColumn;
  p.epilogue.activation = Activation::kRelu;
  return Canonicalize(p);
}

KernelConfig SimtConfig() {
  KernelConfig c;
  c.family = Family::kSimt;
  c.block_m = c.block_n = 32;
  c.block_k = 16;
  c.warps_m = 2;
  c.warps_n = 1;
  c.pdl = false;
  return c;
}

std::string Key(const GemmProblem& p, const KernelConfig& c = SimtConfig(),
                const std::string& arch = "sm_90a", int nvrtc = 13000, int align = 16) {
  return KeyText(SpecializeFor(p, c, OfflineTarget(90), align), arch, nvrtc);
}

TEST(SpecializeTest, WritesExactConstants) {
  const GemmProblem p = Base();
  const KernelFamily& f = GetFamily(Family::kSimt);
  KernelSource s = Specialize(p, SimtConfig(), f, f.Shape(p, SimtConfig(), OfflineTarget(90)), 16);
  EXPECT_THAT(s.source, HasSubstr("kM = 64, kN = 128, kK = 256"));
  EXPECT_THAT(s.source, HasSubstr("kLda = 256, kLdb = 128, kLdc = 128, kLdd = 128"));
  EXPECT_THAT(s.source, HasSubstr("kBias = 1, kAct = 1"));
  EXPECT_THAT(s.source, HasSubstr("kThreads = 64"));
  EXPECT_THAT(s.source, HasSubstr("#include \"jitgemm/simt/gemm_simt.cuh\""));
  EXPECT_EQ(s.name_expression, "jitgemm::simt::GemmSimt<JitgemmSpec>");
  EXPECT_EQ(s.kernel_name, "gemm_simt_f16_rr_r_32x32x16_w2x1_s1_bias_col_relu");
  // Nothing machine-specific may enter the generated code or the key.
  for (const char* path : {"/usr/", "/home/", "/tmp/", "/opt/", "/root/"}) {
    EXPECT_THAT(Key(p), Not(HasSubstr(path)));
  }
}

TEST(SpecializeTest, RuntimeMLeavesMOut) {
  KernelConfig c = SimtConfig();
  c.runtime_m = true;
  const GemmProblem p = Base();
  const KernelFamily& f = GetFamily(Family::kSimt);
  EXPECT_THAT(Specialize(p, c, f, f.Shape(p, c, OfflineTarget(90)), 16).source,
              HasSubstr("kM = 0,"));
}

// RELIABILITY item 14: every input of the kernel changes the key; nothing else does.
struct KeyCase {
  std::string name;
  std::function<std::string()> key;
};

TEST(KeyTextTest, EveryFieldChangesTheKey) {
  const std::string base = Key(Base());
  EXPECT_EQ(base, Key(Base())) << "keys must be deterministic";
  std::vector<KeyCase> cases = {
      {"arch", [] { return Key(Base(), SimtConfig(), "sm_90"); }},
      {"nvrtc", [] { return Key(Base(), SimtConfig(), "sm_90a", 13010); }},
      {"alignment", [] { return Key(Base(), SimtConfig(), "sm_90a", 13000, 4); }},
      {"m",
       [] {
         auto p = Base();
         p.m = 65;
         return Key(p);
       }},
      {"n",
       [] {
         auto p = Base();
         p.n = 129;
         p.d.ld = 129;
         return Key(p);
       }},
      {"k",
       [] {
         auto p = Base();
         p.k = 255;
         return Key(p);
       }},
      {"lda",
       [] {
         auto p = Base();
         p.a.ld = 264;
         return Key(p);
       }},
      {"ldb",
       [] {
         auto p = Base();
         p.b.ld = 136;
         return Key(p);
       }},
      {"ldd",
       [] {
         auto p = Base();
         p.d.ld = 136;
         return Key(p);
       }},
      {"type",
       [] {
         auto p = Base();
         p.a.type = p.b.type = DataType::kBF16;
         return Key(p);
       }},
      {"out type",
       [] {
         auto p = Base();
         p.d.type = DataType::kF32;
         return Key(p);
       }},
      {"layout a",
       [] {
         auto p = Base();
         p.a.layout = Layout::kColMajor;
         p.a.ld = 64;
         return Key(p);
       }},
      {"layout b",
       [] {
         auto p = Base();
         p.b.layout = Layout::kColMajor;
         p.b.ld = 256;
         return Key(p);
       }},
      {"layout d",
       [] {
         auto p = Base();
         p.d.layout = Layout::kColMajor;
         p.d.ld = 64;
         return Key(p);
       }},
      {"beta",
       [] {
         auto p = Base();
         p.epilogue.beta = 1.f;
         return Key(p);
       }},
      {"bias",
       [] {
         auto p = Base();
         p.epilogue.bias = BiasMode::kPerRow;
         return Key(p);
       }},
      {"act",
       [] {
         auto p = Base();
         p.epilogue.activation = Activation::kSilu;
         return Key(p);
       }},
      {"batch",
       [] {
         auto p = Base();
         p.batch_count = 2;
         p.a.batch_stride = 64 * 256;
         p.b.batch_stride = 0;
         p.d.batch_stride = 64 * 128;
         return Key(p);
       }},
      {"tile",
       [] {
         auto c = SimtConfig();
         c.block_m = 64;
         return Key(Base(), c);
       }},
      {"pdl",
       [] {
         auto c = SimtConfig();
         c.pdl = true;
         return Key(Base(), c);
       }},
  };
  std::set<std::string> seen = {base};
  for (const auto& c : cases) {
    const std::string k = c.key();
    EXPECT_NE(k, base) << c.name << " does not change the key";
    EXPECT_TRUE(seen.insert(k).second) << c.name << " collides with another case";
  }
}

TEST(KeyTextTest, AlphaValueAndUnreadCDoNotChangeTheKey) {
  // alpha and beta are run-time arguments; only whether C is read is compiled in.
  GemmProblem p = Base();
  p.epilogue.alpha = 2.5f;
  EXPECT_EQ(Key(Base()), Key(Canonicalize(p)));
  GemmProblem q = Base();
  q.c.type = DataType::kF32;
  EXPECT_EQ(Key(Base()), Key(Canonicalize(q)));
}

TEST(KeyTextTest, NamesItsOwnSourcesHashAndAbi) {
  const std::string k = Key(Base());
  EXPECT_THAT(k,
              HasSubstr("sources=" + KernelSourcesHash("#include \"jitgemm/simt/gemm_simt.cuh\"")));
  EXPECT_THAT(k, HasSubstr("abi="));
  EXPECT_EQ(EmbeddedSourcesHash().size(), 16u);
  // The whole tree's hash is not what a kernel key carries any more.
  EXPECT_THAT(k, Not(HasSubstr("sources=" + EmbeddedSourcesHash())));
}

}  // namespace
}  // namespace jitgemm::jit
