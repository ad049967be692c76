// The problems the sm90 family's host-rule tests ask about: nn.Linear's
// layouts (x row-major, W as a K-major B) with no epilogue, packed batches
// of them, and gated ones.
#ifndef JITGEMM_TESTS_JIT_SM90_PROBLEMS_H_
#define JITGEMM_TESTS_JIT_SM90_PROBLEMS_H_

#include <cstdint>

#include "jit/family.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit::sm90_test {

inline const KernelFamily& Sm90() { return GetFamily(Family::kSm90); }

inline GemmProblem Linear(int64_t m, int64_t n, int64_t k, DataType t = DataType::kBF16) {
  GemmProblem p = MakeGemm(m, n, k, t);
  p.b.layout = Layout::kColMajor;
  return Canonicalize(p);
}

// `batch` packed problems of Linear's layouts, one after another.
inline GemmProblem BatchedLinear(int64_t m, int64_t n, int64_t k, int64_t batch) {
  GemmProblem p = Linear(m, n, k);
  p.batch_count = batch;
  p.a.batch_stride = m * k;
  p.b.batch_stride = n * k;
  p.d.batch_stride = p.c.batch_stride = m * n;
  return p;
}

// SwiGLU over [gate | up] halves of a K-major B of 2n columns.
inline GemmProblem GatedLinear(int64_t m, int64_t n, int64_t k) {
  GemmProblem p = MakeGemm(m, n, k, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  p.epilogue.activation = Activation::kSilu;
  p.epilogue.gate = Gate::kHalves;
  return Canonicalize(p);
}

}  // namespace jitgemm::jit::sm90_test

#endif  // JITGEMM_TESTS_JIT_SM90_PROBLEMS_H_
