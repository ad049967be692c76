// How the cost-model families (sm80, sm90) turn scored configs into their
// candidate list: cheapest first, ties in proposal order, no repeats, and as
// many as the tuning policy wants.
//
// Thread safety: a pure function.
#ifndef JITGEMM_JIT_FAMILIES_RANKING_H_
#define JITGEMM_JIT_FAMILIES_RANKING_H_

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "jit/kernel_config.h"
#include "jitgemm/options.h"

namespace jitgemm::jit {

// `fast_limit`: how many kFast keeps (kHeuristic keeps 1, kExhaustive all).
inline std::vector<KernelConfig> RankByCost(std::vector<std::pair<double, KernelConfig>> scored,
                                            TuningPolicy policy, size_t fast_limit) {
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<KernelConfig> out;
  for (const auto& [cost, c] : scored) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  const size_t limit = policy == TuningPolicy::kHeuristic ? 1
                       : policy == TuningPolicy::kFast    ? fast_limit
                                                          : out.size();
  if (out.size() > limit) out.resize(limit);
  return out;
}

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_FAMILIES_RANKING_H_
