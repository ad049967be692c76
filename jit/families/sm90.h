// Rules of the sm90 family that the host needs beyond the KernelFamily
// interface (jit/families/sm90.cc).
//
// Thread safety: pure functions.
#ifndef JITGEMM_JIT_FAMILIES_SM90_H_
#define JITGEMM_JIT_FAMILIES_SM90_H_

#include "jitgemm/problem.h"

namespace jitgemm::jit {

// True when the sm90 kernels store D through shared memory with TMA (16-bit,
// row-major D whose rows start 16-byte aligned); otherwise they store from
// registers. The kernel reads the answer from its spec's kTmaStore.
bool Sm90TmaStore(const GemmProblem& problem);

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_FAMILIES_SM90_H_
