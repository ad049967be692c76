// Which kernel configs may serve a problem, best guess first, across all
// families. The single place where the choice of family is made (and logged
// by the caller).
//
// Thread safety: pure function.
#ifndef JITGEMM_JIT_CANDIDATES_H_
#define JITGEMM_JIT_CANDIDATES_H_

#include <vector>

#include "jit/family.h"
#include "jit/kernel_config.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit {

// REQUIRES: `problem` is valid and canonical. Families are tried in order of
// expected speed (small_m for M <= 64, then the tensor-core family, then SIMT);
// every returned config is supported. kHeuristic returns at most one config.
std::vector<KernelConfig> ProposeConfigs(const GemmProblem& problem, const TargetInfo& target,
                                         const Options& options);

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_CANDIDATES_H_
