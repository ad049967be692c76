// The problem a plan is made for. The sm90 family stores a row-major D
// through shared memory and TMA stores, and a column-major one from registers
// at about half the speed, so a large column-major D is planned as its
// transpose: D^T = B^T A^T, an N x M problem
// with a row-major D over the same memory, A and B swapped and a bias per
// column becoming one per row. The run swaps the A and B pointers.
//
// Only where that pays: M and N both at least kPlanMinSide and K at least
// kPlanMinK. There the sm90 family's large tiles serve the problem, and their
// register store of a column-major D is what costs. Smaller or skinnier
// problems go to the sm80, small-M or cuBLAS routes, whose column-major store
// costs little, and there the transpose's flipped operand layouts measured
// slower as often as faster (docs/kernels.md). Kept as asked too: a gated
// epilogue (its halves are columns of D), a batch broadcasting A or B (the
// family folds a broadcast B into M), and Options::constant_b (the promise is
// about B, which the transpose would read as A).
//
// Pure functions of their arguments; thread-safe.
#ifndef JITGEMM_CORE_PLANNED_PROBLEM_H_
#define JITGEMM_CORE_PLANNED_PROBLEM_H_

#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm {

struct PlannedProblem {
  GemmProblem problem;      // what candidates, tuning records and kernels see
  bool transposed = false;  // run with the A and B pointers swapped
};

// The least M and N, and the least K, of a problem planned as its transpose.
inline constexpr int64_t kPlanMinSide = 256;
inline constexpr int64_t kPlanMinK = 64;

// The transpose of a canonical problem whose D is column-major: N x M x K with
// A' = B^T, B' = A^T, C' = C^T, D' = D^T (row-major), the bias mode flipped.
GemmProblem TransposeProblem(const GemmProblem& canonical);

// The problem Plan::Create plans for a canonical, valid problem under
// `options`: the problem itself, or its transpose (see above).
PlannedProblem PlanProblem(const GemmProblem& canonical, const Options& options);

}  // namespace jitgemm

#endif  // JITGEMM_CORE_PLANNED_PROBLEM_H_
