// The nn.Linear-shaped problems the family tests use.
#ifndef JITGEMM_TESTS_JIT_LINEAR_PROBLEM_H_
#define JITGEMM_TESTS_JIT_LINEAR_PROBLEM_H_

#include <cstdint>

#include "jitgemm/problem.h"

namespace jitgemm::jit {

// y = x W^T + bias, relu: x (M, K) row-major, W (N, K) row-major = B
// col-major; `batch` > 1 shares one W across the batch. Canonical.
inline GemmProblem Linear(int64_t m, int64_t n, int64_t k, DataType t, int64_t batch = 1) {
  GemmProblem p = MakeGemm(m, n, k, t);
  p.b.layout = Layout::kColMajor;
  p.epilogue.bias = BiasMode::kPerColumn;
  p.epilogue.activation = Activation::kRelu;
  if (batch > 1) {
    p.batch_count = batch;
    p.a.batch_stride = m * k;
    p.b.batch_stride = 0;
    p.d.batch_stride = m * n;
  }
  return Canonicalize(p);
}

}  // namespace jitgemm::jit

#endif  // JITGEMM_TESTS_JIT_LINEAR_PROBLEM_H_
