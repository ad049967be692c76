// The gate family (kernels_src/epilogue/gate_activation.cuh): the second
// half of a gated problem's cuBLAS route. cuBLASLt computes the inner
// product of A with all 2N columns of B = [B_gate | B_up] into a workspace
// W, and the gate pass writes
//
//   D[b][i][j] = act(W[b][i][j] (+ bias[j])) * (W[b][i][N + j] (+ bias[N + j]))
//
// in D's own type, layout, leading dimension and batch stride (the bias
// only when cuBLASLt did not add it already).
//
// W is the product operand below: M x 2N per batch, of D's type and storage
// order, packed, batches back to back. D's order keeps both walks on the
// same contiguous dimension: with row-major D a row of W holds a gate row
// and the matching up row N elements further on; with column-major D the up
// column sits N columns (N * M elements) after its gate column.
//
// Thread safety: pure functions.
#ifndef JITGEMM_JIT_FAMILIES_GATE_H_
#define JITGEMM_JIT_FAMILIES_GATE_H_

#include <cstdint>

#include "jitgemm/problem.h"

namespace jitgemm::jit {

// W for a canonical, valid gated problem: as an operand of M x 2N rows and
// columns (kNoStride when the problem is not batched).
Operand GateProductOperand(const GemmProblem& problem);

// Elements of W over all batches: M * 2N * batch_count.
int64_t GateProductElements(const GemmProblem& problem);

// Elements between a gate element of W and its up partner: N along a row
// of row-major W, N columns of M elements in column-major W.
int64_t GateUpOffset(const GemmProblem& problem);

// Elements of D per access (KernelConfig::block_n of the family): the
// widest 4, 8 or 16-byte vector that every line start of D and of both
// halves of W is aligned to, given D's pointer alignment (W is the
// backend's own allocation, 256-byte aligned); 1 (the scalar kernel) when
// not even two elements are.
//
//   bf16 row-major D, N = 3072, ld 3072, pointer_alignment 16  -> 8
//   bf16 row-major D, N = 3071                                  -> 1
int GateWidth(const GemmProblem& problem, int pointer_alignment);

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_FAMILIES_GATE_H_
