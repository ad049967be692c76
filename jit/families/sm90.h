// Rules of the sm90 family that the host needs beyond the KernelFamily
// interface (jit/families/sm90.cc).
//
// Thread safety: pure functions.
#ifndef JITGEMM_JIT_FAMILIES_SM90_H_
#define JITGEMM_JIT_FAMILIES_SM90_H_

#include "jit/kernel_config.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit {

// True when the sm90 kernels store D through shared memory with TMA: 16-bit
// or fp32 row-major D whose rows start and end 16-byte aligned, and for fp32
// D only configs with more tiles than an H100 has SMs; otherwise they store
// from registers. The kernel reads the answer from its spec's kTmaStore.
bool Sm90TmaStore(const GemmProblem& problem, const KernelConfig& config);

// Bytes of each row of the boxes in which the sm90 kernels load an N-major B,
// the span of their swizzle: 128 (64-column blocks), or 64 (32-column blocks)
// for a tile, or a gated tile's halves, not made of whole 64-column blocks.
int Sm90NMajorBBoxRowBytes(const GemmProblem& problem, const KernelConfig& config);

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_FAMILIES_SM90_H_
