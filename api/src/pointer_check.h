// Run-time checks of the pointers of one Plan::Run against the plan's problem.
//
// Thread safety: a pure function.
#ifndef JITGEMM_API_SRC_POINTER_CHECK_H_
#define JITGEMM_API_SRC_POINTER_CHECK_H_

#include "absl/status/status.h"
#include "jitgemm/pointers.h"
#include "jitgemm/problem.h"

namespace jitgemm {

// Nulls, alignment promised by `pointer_alignment`, and D overlapping an input.
// InvalidArgument names the pointer ("a: null pointer").
absl::Status CheckPointers(const GemmProblem& canonical, const GemmPointers& ptrs,
                           int pointer_alignment);

}  // namespace jitgemm

#endif  // JITGEMM_API_SRC_POINTER_CHECK_H_
