// The candidate set: kernel choice in one place (tune/candidate_set.h).
#include "tune/candidate_set.h"

#include <variant>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/candidates.h"
#include "jit/launcher.h"

namespace jitgemm::tune {
namespace {

GemmProblem Linear(int64_t m) {
  GemmProblem p = MakeGemm(m, 2048, 4096, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  p.epilogue.bias = BiasMode::kPerColumn;
  p.epilogue.activation = Activation::kGeluErf;  // no Lt epilogue: the elementwise pass
  return Canonicalize(p);
}

int CountCublas(const std::vector<Candidate>& set) {
  int n = 0;
  for (const Candidate& c : set) n += IsCublas(c);
  return n;
}

TEST(CandidateSetTest, JitConfigsFirstThenCublasSuggestionsByPolicy) {
  const jit::TargetInfo hopper = jit::OfflineTarget(90);
  for (auto [policy, cublas] :
       {std::pair{TuningPolicy::kHeuristic, 1}, std::pair{TuningPolicy::kFast, 3},
        std::pair{TuningPolicy::kExhaustive, 6}}) {
    Options o;
    o.tuning = policy;
    const std::vector<Candidate> set = ProposeCandidates(Linear(8), hopper, o);
    EXPECT_EQ(CountCublas(set), cublas);
    const std::vector<jit::KernelConfig> jit = jit::ProposeConfigs(Linear(8), hopper, o);
    EXPECT_EQ(JitConfigs(set), jit);
    ASSERT_EQ(set.size(), jit.size() + cublas);
    for (size_t i = 0; i < set.size(); ++i) {
      EXPECT_EQ(IsCublas(set[i]), i >= jit.size()) << i;
      if (i >= jit.size()) {
        EXPECT_EQ(std::get<CublasAlgorithm>(set[i]).index, static_cast<int>(i - jit.size()));
      }
    }
  }
}

TEST(CandidateSetTest, BackendPolicyRemovesASide) {
  const jit::TargetInfo hopper = jit::OfflineTarget(90);
  Options o;
  o.backend = BackendPolicy::kJitOnly;
  EXPECT_EQ(CountCublas(ProposeCandidates(Linear(8), hopper, o)), 0);
  o.backend = BackendPolicy::kCublasOnly;
  const std::vector<Candidate> set = ProposeCandidates(Linear(8), hopper, o);
  EXPECT_TRUE(JitConfigs(set).empty());
  EXPECT_EQ(CountCublas(set), 3);
}

TEST(CandidateSetTest, CublasCandidatesCarryTheElementwisePass) {
  const jit::TargetInfo hopper = jit::OfflineTarget(90), ampere = jit::OfflineTarget(80);
  Options o;
  const std::vector<Candidate> set = ProposeCandidates(Linear(8), hopper, o);
  const auto& first = std::get<CublasAlgorithm>(set[set.size() - 3]);
  ASSERT_TRUE(first.elementwise.has_value());
  EXPECT_EQ(first.elementwise->family, jit::Family::kElementwise);
  EXPECT_TRUE(first.elementwise->pdl);
  const std::vector<Candidate> old = ProposeCandidates(Linear(8), ampere, o);
  EXPECT_FALSE(std::get<CublasAlgorithm>(old.back()).elementwise->pdl) << "PDL needs sm_90";
}

// The pass reads 16-byte chunks of D only where the caller's pointers allow.
TEST(CandidateSetTest, ElementwisePassWidthFollowsThePointerAlignment) {
  const jit::TargetInfo hopper = jit::OfflineTarget(90);
  for (auto [alignment, width] :
       {std::pair{16, 8}, std::pair{8, 4}, std::pair{4, 2}, std::pair{2, 1}}) {
    Options o;
    o.pointer_alignment = alignment;
    const std::vector<Candidate> set = ProposeCandidates(Linear(8), hopper, o);
    const auto& cublas = std::get<CublasAlgorithm>(set.back());
    ASSERT_TRUE(cublas.elementwise.has_value());
    EXPECT_EQ(cublas.elementwise->block_n, width) << "pointer_alignment " << alignment;
  }
}

// y = silu(x W_gate^T) * (x W_up^T): B = torch.cat([W_gate, W_up]) column-major.
GemmProblem Swiglu(int64_t m) {
  GemmProblem p = MakeGemm(m, 3072, 1024, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.activation = Activation::kSilu;
  return Canonicalize(p);
}

// cuBLAS serves a gated problem with the [gate | up] product and the gate
// pass, so every cuBLAS candidate carries the gate kernel, never the
// in-place elementwise one.
TEST(CandidateSetTest, GatedCublasCandidatesCarryTheGatePass) {
  for (auto [alignment, width] : {std::pair{16, 8}, std::pair{4, 2}, std::pair{2, 1}}) {
    Options o;
    o.tuning = TuningPolicy::kFast;
    o.pointer_alignment = alignment;
    const std::vector<Candidate> set = ProposeCandidates(Swiglu(512), jit::OfflineTarget(90), o);
    EXPECT_EQ(CountCublas(set), 3);
    for (const Candidate& c : set) {
      if (!IsCublas(c)) continue;
      const auto& cublas = std::get<CublasAlgorithm>(c);
      ASSERT_TRUE(cublas.elementwise.has_value());
      EXPECT_EQ(cublas.elementwise->family, jit::Family::kGate);
      EXPECT_EQ(cublas.elementwise->block_n, width) << "pointer_alignment " << alignment;
    }
  }
}

// On an A100 no JIT family gates (the sm90 family is Hopper's): cuBLAS is
// the route, and the candidate set has it.
// Before Hopper the mma.sync families gate (small_m at M <= 64), and every
// cuBLAS candidate carries the gate pass.
TEST(CandidateSetTest, GatedProblemsBeforeHopperAreSm80SmallMAndCublasOnes) {
  Options o;
  for (int64_t m : {512, 16}) {
    const std::vector<Candidate> set = ProposeCandidates(Swiglu(m), jit::OfflineTarget(80), o);
    const std::vector<jit::KernelConfig> jit = JitConfigs(set);
    EXPECT_FALSE(jit.empty()) << "M = " << m;
    bool small_m = false;
    for (const jit::KernelConfig& c : jit) {
      EXPECT_TRUE(c.family == jit::Family::kSm80 || c.family == jit::Family::kSmallM)
          << c.ToString();
      small_m = small_m || c.family == jit::Family::kSmallM;
    }
    EXPECT_EQ(small_m, m <= 64) << "M = " << m;
    ASSERT_EQ(CountCublas(set), CublasSuggestions(o.tuning));
    EXPECT_EQ(std::get<CublasAlgorithm>(set.back()).elementwise->family, jit::Family::kGate);
  }
}

// Where Lt's epilogue would activate (ReLU, GELU-tanh), Lt's product with the
// activation in the pass is timed too, after Lt's suggestions, and is never
// the reference; other epilogues and gated problems have no such candidate.
TEST(CandidateSetTest, LtActivationsAlsoGetTheirPassVariant) {
  const jit::TargetInfo hopper = jit::OfflineTarget(90);
  for (TuningPolicy policy : {TuningPolicy::kHeuristic, TuningPolicy::kFast}) {
    Options o;
    o.tuning = policy;
    for (Activation act : {Activation::kRelu, Activation::kGeluTanh}) {
      GemmProblem p = Linear(512);
      p.epilogue.activation = act;
      const std::vector<Candidate> set = ProposeCandidates(p, hopper, o);
      ASSERT_EQ(CountCublas(set), CublasSuggestions(policy) + 1) << ActivationName(act);
      const auto& last = std::get<CublasAlgorithm>(set.back());
      EXPECT_TRUE(last.activation_pass);
      EXPECT_EQ(last.index, 0);
      ASSERT_TRUE(last.elementwise.has_value());
      EXPECT_EQ(last.elementwise->family, jit::Family::kElementwise);
      EXPECT_FALSE(IsCublasReference(set.back()));
      EXPECT_EQ(CandidateName(set.back()), "cublas+pass");
      int references = 0;
      for (const Candidate& c : set) references += IsCublasReference(c);
      EXPECT_EQ(references, 1);
    }
  }
  Options o;
  for (Activation act : {Activation::kNone, Activation::kSilu, Activation::kGeluErf}) {
    GemmProblem p = Linear(512);
    p.epilogue.activation = act;
    for (const Candidate& c : ProposeCandidates(p, hopper, o)) {
      if (IsCublas(c)) {
        EXPECT_FALSE(std::get<CublasAlgorithm>(c).activation_pass) << ActivationName(act);
      }
    }
  }
  GemmProblem row_bias = Linear(512);  // off Lt's axis: the pass already does both
  row_bias.epilogue.bias = BiasMode::kPerRow;
  row_bias.epilogue.activation = Activation::kRelu;
  EXPECT_EQ(CountCublas(ProposeCandidates(row_bias, hopper, o)), 3);
  GemmProblem gated = Swiglu(512);
  gated.epilogue.activation = Activation::kGeluTanh;
  EXPECT_EQ(CountCublas(ProposeCandidates(gated, hopper, o)), 3);
  o.backend = BackendPolicy::kJitOnly;
  GemmProblem relu = Linear(512);
  relu.epilogue.activation = Activation::kRelu;
  EXPECT_EQ(CountCublas(ProposeCandidates(relu, hopper, o)), 0);
}

TEST(CandidateSetTest, NamesAreTheRecordsSpelling) {
  EXPECT_EQ(CandidateName(CublasAlgorithm{0}), "cublas");
  EXPECT_EQ(CandidateName(CublasAlgorithm{2}), "cublas#2");
  EXPECT_EQ(CandidateName(CublasAlgorithm{0, std::nullopt, true}), "cublas+pass");
  EXPECT_EQ(CandidateName(CublasAlgorithm{2, std::nullopt, true}), "cublas#2+pass");
  jit::KernelConfig c;
  c.family = jit::Family::kSm80;
  EXPECT_EQ(CandidateName(c), c.ToString());
  EXPECT_EQ(CublasSuggestions(TuningPolicy::kFast), 3);
}

}  // namespace
}  // namespace jitgemm::tune
