// JITGEMM_LOG=info|debug: one line per plan decision on stderr.
#ifndef JITGEMM_API_SRC_LOG_H_
#define JITGEMM_API_SRC_LOG_H_

#include "jitgemm/plan.h"
#include "jitgemm/problem.h"

namespace jitgemm {

bool LogEnabled();
// Prints when JITGEMM_LOG=info|debug, or when `force` unless JITGEMM_LOG=off.
void LogDecision(const GemmProblem& problem, const PlanInfo& info, bool force = false);

}  // namespace jitgemm

#endif  // JITGEMM_API_SRC_LOG_H_
