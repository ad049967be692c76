// The problem and options signatures enter every tuning-record key: their text
// is pinned here, so a change that would orphan every stored decision shows up
// as a failing test rather than as a silent retune in the field.
#include "core/options_signature.h"
#include "core/problem_signature.h"
#include "gtest/gtest.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm {
namespace {

TEST(SignaturesTest, ProblemSignatureTextIsPinned) {
  GemmProblem p = MakeGemm(8, 2048, 4096, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  p.epilogue.bias = BiasMode::kPerColumn;
  p.epilogue.activation = Activation::kRelu;
  EXPECT_EQ(ProblemSignature(Canonicalize(p)),
            "m=8 n=2048 k=4096 batch=1 a=bf16,r,4096,-1 b=bf16,c,4096,-1 c=bf16,r,2048,-1 "
            "d=bf16,r,2048,-1 alpha=0x1p+0 beta=0x0p+0 bias=1 bias_stride=0 act=1");
  // Gated problems append their gate; ungated ones (above) keep their text.
  p.epilogue.gate = Gate::kHalves;
  EXPECT_EQ(ProblemSignature(Canonicalize(p)),
            "m=8 n=2048 k=4096 batch=1 a=bf16,r,4096,-1 b=bf16,c,4096,-1 c=bf16,r,2048,-1 "
            "d=bf16,r,2048,-1 alpha=0x1p+0 beta=0x0p+0 bias=1 bias_stride=0 act=1 gate=1");
}

TEST(SignaturesTest, OptionsSignatureTextIsPinned) {
  Options o;
  EXPECT_EQ(OptionsSignature(o), "backend=0 tuning=1 tf32=0 pdl=1 align=16 margin=0.03");
  o.constant_b = true;
  o.tuning = TuningPolicy::kExhaustive;
  o.pointer_alignment = 4;
  EXPECT_EQ(OptionsSignature(o), "backend=0 tuning=2 tf32=0 pdl=1 constb=1 align=4 margin=0.03");
  // A declared regime is another decision; auto keeps the text it had before
  // regimes existed.
  o.regime = TimingRegime::kResident;
  EXPECT_EQ(OptionsSignature(o),
            "backend=0 tuning=2 tf32=0 pdl=1 constb=1 regime=resident align=4 margin=0.03");
  o.regime = TimingRegime::kStreaming;
  EXPECT_NE(OptionsSignature(o).find(" regime=streaming "), std::string::npos);
}

TEST(SignaturesTest, JitSwitchAndArchDoNotEnterTheOptionsSignature) {
  Options a, b;
  b.jit_enabled = false;
  b.arch = "sm_90a";
  EXPECT_EQ(OptionsSignature(a), OptionsSignature(b));
}

TEST(SignaturesTest, OperandSpanCoversEveryBatch) {
  const Operand op{DataType::kF32, Layout::kColMajor, /*ld=*/10, /*batch_stride=*/100};
  // 3 columns of ld 10, the last one 4 rows long, then 2 more batches of 100.
  EXPECT_EQ(OperandSpanBytes(op, /*rows=*/4, /*cols=*/3, /*batch=*/3), (2 * 10 + 4 + 200) * 4);
}

}  // namespace
}  // namespace jitgemm
