#include "tune/candidate_set.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cublas_mapping.h"
#include "backends/elementwise_epilogue.h"
#include "jit/candidates.h"

namespace jitgemm::tune {

std::string CandidateName(const Candidate& candidate) {
  if (const auto* cublas = std::get_if<CublasAlgorithm>(&candidate)) {
    return absl::StrCat(cublas->index == 0 ? "cublas" : absl::StrCat("cublas#", cublas->index),
                        cublas->activation_pass ? "+pass" : "");
  }
  return std::get<jit::KernelConfig>(candidate).ToString();
}

int CublasSuggestions(TuningPolicy policy) {
  switch (policy) {
    case TuningPolicy::kExhaustive:
      return 6;
    case TuningPolicy::kFast:
      return 3;
    case TuningPolicy::kHeuristic:
      break;
  }
  return 1;
}

std::vector<Candidate> ProposeCandidates(const GemmProblem& problem, const jit::TargetInfo& target,
                                         const Options& options) {
  std::vector<Candidate> out;
  if (options.backend != BackendPolicy::kCublasOnly) {
    for (jit::KernelConfig& c : jit::ProposeConfigs(problem, target, options)) {
      out.emplace_back(std::move(c));
    }
  }
  if (options.backend != BackendPolicy::kJitOnly) {
    const std::optional<jit::KernelConfig> elementwise =
        ElementwiseConfig(problem, target, options);
    for (int k = 0; k < CublasSuggestions(options.tuning); ++k) {
      out.emplace_back(CublasAlgorithm{k, elementwise});
    }
    // Lt's fused activation is not always its fastest route: time the plain
    // (or BIAS) product with the activation in the pass beside it.
    absl::StatusOr<backends::CublasLtMapping> mapping =
        backends::MapToCublasLt(problem, options.allow_tf32);
    if (elementwise.has_value() && problem.epilogue.gate == Gate::kNone && mapping.ok() &&
        backends::LtActivates(*mapping)) {
      out.emplace_back(CublasAlgorithm{0, elementwise, /*activation_pass=*/true});
    }
  }
  return out;
}

std::vector<jit::KernelConfig> JitConfigs(const std::vector<Candidate>& candidates) {
  std::vector<jit::KernelConfig> out;
  for (const Candidate& c : candidates) {
    if (const auto* config = std::get_if<jit::KernelConfig>(&c)) out.push_back(*config);
  }
  return out;
}

}  // namespace jitgemm::tune
