// The tuning-key recipe (tune/tuning_key.h): its text is pinned, as every
// stored decision is keyed by it.
#include "tune/tuning_key.h"

#include "core/options_signature.h"
#include "core/problem_signature.h"
#include "gtest/gtest.h"

namespace jitgemm::tune {
namespace {

TuningEnvironment Env() {
  TuningEnvironment env;
  env.device_name = "NVIDIA H100 80GB HBM3";
  env.sm_count = 132;
  env.driver_version = 13000;
  env.cublas_version = 130100;
  env.library_version = "0.1.0+abi1+0123456789abcdef";
  return env;
}

TEST(TuningKeyTest, TextIsPinned) {
  const GemmProblem p = Canonicalize(MakeGemm(8, 2048, 4096, DataType::kBF16));
  EXPECT_EQ(TuningKeyText(p, Options(), Env()),
            "jitgemm-tuning-key v1\nproblem=m=8 n=2048 k=4096 batch=1 a=bf16,r,4096,-1 "
            "b=bf16,r,2048,-1 c=bf16,r,2048,-1 d=bf16,r,2048,-1 alpha=0x1p+0 beta=0x0p+0 bias=0 "
            "bias_stride=0 act=0\nbackend=0 tuning=1 tf32=0 pdl=1 align=16 margin=0.03\n"
            "device=NVIDIA H100 80GB HBM3 sms=132 driver=13000 cublas=130100 "
            "lib=0.1.0+abi1+0123456789abcdef\n");
  EXPECT_EQ(TuningKeyText(p, Options(), Env()),
            TuningKeyText(ProblemSignature(p), OptionsSignature(Options()), Env()));
}

TEST(TuningKeyTest, EveryEnvironmentFieldSplitsTheKey) {
  const GemmProblem p = Canonicalize(MakeGemm(8, 2048, 4096, DataType::kBF16));
  const std::string base = TuningKeyText(p, Options(), Env());
  TuningEnvironment e = Env();
  e.device_name = "NVIDIA H100 PCIe";
  EXPECT_NE(TuningKeyText(p, Options(), e), base);
  e = Env();
  e.sm_count = 114;
  EXPECT_NE(TuningKeyText(p, Options(), e), base);
  e = Env();
  e.driver_version = 13010;
  EXPECT_NE(TuningKeyText(p, Options(), e), base);
  e = Env();
  e.cublas_version = 130200;
  EXPECT_NE(TuningKeyText(p, Options(), e), base);
  e = Env();
  e.library_version = "0.1.1";
  EXPECT_NE(TuningKeyText(p, Options(), e), base);
}

TEST(TuningKeyTest, RecordCarriesTheEnvironment) {
  const cache::TuningRecord r = RecordIn(Env());
  EXPECT_EQ(r.device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.sm_count, 132);
  EXPECT_EQ(r.library_version, Env().library_version);
  EXPECT_TRUE(r.winner.empty());
}

}  // namespace
}  // namespace jitgemm::tune
