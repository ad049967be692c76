// The rules of the elementwise family (kernels_src/epilogue/bias_activation.cuh)
// that its users need outside it: how wide a chunk of D one thread reads and
// writes at once, and the grid-stride launch over D's lines that it shares
// with the gate pass (jit/families/gate.h).
//
// Thread safety: pure functions.
#ifndef JITGEMM_JIT_FAMILIES_ELEMENTWISE_H_
#define JITGEMM_JIT_FAMILIES_ELEMENTWISE_H_

#include "absl/status/status.h"
#include "jit/family.h"
#include "jit/kernel_config.h"
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

// What both passes accept as config.block_n: a power of two, and where above
// 1 a 4, 8 or 16-byte access of D's elements that `aligned_bytes` (the
// alignment of every line start it touches, `aligned_by` naming what sets it)
// allows. InvalidArgument naming block_n otherwise.
absl::Status CheckAccessWidth(const GemmProblem& problem, int width, int aligned_bytes,
                              const char* aligned_by);

// The widest such access `aligned_bytes` allows, in elements of D; 1 (the
// scalar kernel) when not even two elements fit in 4 or more bytes.
int AccessWidth(const GemmProblem& problem, int aligned_bytes);

// The launch of a pass over D in chunks of config.block_n elements of its
// lines, config.warps_m warps a block: a grid-stride loop sized to fill the
// target once (never one thread per element), and at least one block.
LaunchShape GridStrideShape(const GemmProblem& problem, const KernelConfig& config,
                            const TargetInfo& target);

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_FAMILIES_ELEMENTWISE_H_
