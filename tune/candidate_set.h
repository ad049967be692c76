// Kernel choice, in one place: the candidates that may serve a problem, as
// typed values (a JIT kernel config or a cuBLASLt algorithm), in the order the
// tuner tries them. The tuner times a candidate set and builds the winner
// from the same value it timed; names are only how tuning records and
// PlanInfo spell a candidate, never parsed back into one.
//
// Thread safety: pure functions.
#ifndef JITGEMM_TUNE_CANDIDATE_SET_H_
#define JITGEMM_TUNE_CANDIDATE_SET_H_

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "jit/family.h"
#include "jit/kernel_config.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm::tune {

// cuBLASLt's `index`-th heuristic suggestion (0: its first choice), and the
// elementwise kernel that completes it where Lt has no epilogue for the
// problem (nullopt: none, such problems then cannot use cuBLAS).
// `activation_pass`: Lt's product (with its bias) and the activation in the
// elementwise pass, where Lt's epilogue could apply it itself
// (backends::WithActivationInPass).
struct CublasAlgorithm {
  int index = 0;
  std::optional<jit::KernelConfig> elementwise = std::nullopt;
  bool activation_pass = false;
  friend bool operator==(const CublasAlgorithm&, const CublasAlgorithm&) = default;
};

using Candidate = std::variant<jit::KernelConfig, CublasAlgorithm>;

inline bool IsCublas(const Candidate& c) { return std::holds_alternative<CublasAlgorithm>(c); }

// The tuner's reference: cuBLASLt's first suggestion for the problem's own
// epilogue, what PyTorch runs.
inline bool IsCublasReference(const Candidate& c) {
  const auto* cublas = std::get_if<CublasAlgorithm>(&c);
  return cublas != nullptr && cublas->index == 0 && !cublas->activation_pass;
}

// How records and PlanInfo name a candidate: the config's text
// (KernelConfig::ToString), "cublas" for cuBLASLt's first suggestion and
// "cublas#k" for its k-th, "+pass" after either for its activation_pass
// variant. Stored records use these names, so they must not change.
std::string CandidateName(const Candidate& candidate);

// How many of cuBLASLt's suggestions a tuning policy times: its first is not
// always its fastest (1 / 3 / 6 for heuristic / fast / exhaustive).
int CublasSuggestions(TuningPolicy policy);

// The candidates for a canonical, valid problem on `target`: the JIT configs
// (jit::ProposeConfigs, best guess first) unless the backend policy is
// cuBLAS only, then cuBLASLt's first CublasSuggestions(options.tuning)
// algorithms unless it is JIT only, then, where Lt's epilogue would apply the
// activation, Lt's first suggestion with the activation in the pass (the
// heuristic policy never builds it unless a stored decision names it).
std::vector<Candidate> ProposeCandidates(const GemmProblem& problem, const jit::TargetInfo& target,
                                         const Options& options);

// The JIT configs of a candidate set, in order.
std::vector<jit::KernelConfig> JitConfigs(const std::vector<Candidate>& candidates);

}  // namespace jitgemm::tune

#endif  // JITGEMM_TUNE_CANDIDATE_SET_H_
