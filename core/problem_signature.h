// The problem signature: every field of a canonical GemmProblem as one stable
// text, in a fixed order. It is the problem part of kernel keys, tuning-record
// keys, plan-reuse maps and manifests' de-duplication, so its text must not
// change without a reason (a change orphans every stored tuning decision).
//
// Thread safety: pure functions.
#ifndef JITGEMM_CORE_PROBLEM_SIGNATURE_H_
#define JITGEMM_CORE_PROBLEM_SIGNATURE_H_

#include <cstdint>
#include <string>

#include "jitgemm/problem.h"

namespace jitgemm {

// e.g. "m=1 n=2048 k=4096 batch=1 a=bf16,r,4096,-1 b=... act=1".
// REQUIRES: `canonical` is Canonicalize()d, so equal problems give equal text.
std::string ProblemSignature(const GemmProblem& canonical);

// Bytes an operand spans over all batches, from its first element.
int64_t OperandSpanBytes(const Operand& op, int64_t rows, int64_t cols, int64_t batch);

}  // namespace jitgemm

#endif  // JITGEMM_CORE_PROBLEM_SIGNATURE_H_
