#include "jit/candidates.h"

#include <vector>

namespace jitgemm::jit {

std::vector<KernelConfig> ProposeConfigs(const GemmProblem& p, const TargetInfo& target,
                                         const Options& options) {
  std::vector<Family> order;
  const bool half = p.a.type == DataType::kF16 || p.a.type == DataType::kBF16;
  if (half && p.m <= 64) order.push_back(Family::kSmallM);
  if (half) order.push_back(Family::kSm80);
  order.push_back(Family::kSimt);

  std::vector<KernelConfig> out;
  for (Family f : order) {
    const KernelFamily& family = GetFamily(f);
    if (family.id() != f) continue;  // family not built into this library
    for (KernelConfig c : family.Candidates(p, target, options.tuning)) {
      c.pdl = options.pdl && target.sm >= 90;  // every kernel waits before touching memory
      if (!family.Supports(p, c, target).ok()) continue;
      out.push_back(c);
      if (options.tuning == TuningPolicy::kHeuristic) return out;
      if (options.tuning == TuningPolicy::kFast && out.size() >= 8) return out;
    }
  }
  return out;
}

}  // namespace jitgemm::jit
