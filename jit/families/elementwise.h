// The rule of the elementwise family (kernels_src/epilogue/bias_activation.cuh)
// that its users need outside it: how wide a chunk of D one thread reads and
// writes at once.
//
// Thread safety: a pure function.
#ifndef JITGEMM_JIT_FAMILIES_ELEMENTWISE_H_
#define JITGEMM_JIT_FAMILIES_ELEMENTWISE_H_

#include "jitgemm/problem.h"

namespace jitgemm::jit {

// Elements of D per access (KernelConfig::block_n of the family): the widest
// 4, 8 or 16-byte vector that every line start of D is aligned to, given that
// D's pointer is `pointer_alignment`-byte aligned (Options::pointer_alignment);
// 1 (the scalar kernel) when not even two elements are.
//
//   row-major bf16 D, ld 4096, pointer_alignment 16  -> 8  (16 bytes)
//   row-major f32 D, ld 4096, pointer_alignment 16   -> 4  (16 bytes)
//   row-major f16 D, ld 4099                          -> 1
int ElementwiseWidth(const GemmProblem& problem, int pointer_alignment);

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_FAMILIES_ELEMENTWISE_H_
