// Internal helpers on GemmProblem shared by the plan, the tuner and the tools.
#ifndef JITGEMM_API_SRC_PROBLEM_INTERNAL_H_
#define JITGEMM_API_SRC_PROBLEM_INTERNAL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "jitgemm/plan.h"
#include "jitgemm/problem.h"

namespace jitgemm {

// Every field of a canonical problem, in a fixed order: a stable map key and
// the problem part of tuning-record keys.
std::string ProblemSignature(const GemmProblem& canonical);

// Bytes an operand spans over all batches, from its first element.
int64_t OperandSpanBytes(const Operand& op, int64_t rows, int64_t cols, int64_t batch);

// Run-time checks of the pointers against a canonical problem: nulls,
// alignment promised by `pointer_alignment`, and D overlapping an input.
absl::Status CheckPointers(const GemmProblem& canonical, const GemmPointers& ptrs,
                           int pointer_alignment);

}  // namespace jitgemm

#endif  // JITGEMM_API_SRC_PROBLEM_INTERNAL_H_
