// How far apart in alignment the lines of an operand start: the largest power
// of two, in bytes, dividing its base pointer (the alignment the caller
// promised) and the start of every line (a row of a row-major operand, a column
// of a column-major one) of every batch matrix. A kernel may move vectors that
// wide; a narrower leading dimension or batch stride lowers it.
//
// The JIT families compile it in as each operand's vector width. The cuBLAS
// route tells it to cuBLASLt's heuristic as the operand's alignment: the
// heuristic reads only the base pointer's alignment from its preferences, and
// given the base pointer's alone it chose algorithms that faulted
// (misaligned address) on a D whose leading dimension was odd (docs/tuning.md).
//
// Pure functions of their arguments; thread-safe.
#ifndef JITGEMM_CORE_OPERAND_ALIGNMENT_H_
#define JITGEMM_CORE_OPERAND_ALIGNMENT_H_

#include <cstdint>

#include "jitgemm/problem.h"

namespace jitgemm {

// The largest power of two dividing `bytes`, at most `cap` (a power of two).
int LargestPow2Divisor(int64_t bytes, int cap);

// The alignment of every line of `op`, a rows x cols operand of `batch`
// matrices whose base pointers are `pointer_alignment`-byte aligned (a power
// of two, at most 256; the result is at most that).
int OperandAlignment(const Operand& op, int64_t rows, int64_t cols, int64_t batch,
                     int pointer_alignment);

// The alignment of every batch's bias vector of `type`, `batch_stride`
// elements apart over `batch` batches.
int BiasAlignment(int64_t batch_stride, int64_t batch, DataType type, int pointer_alignment);
// The problem's bias (stored with D's type).
int BiasAlignment(const GemmProblem& problem, int pointer_alignment);

}  // namespace jitgemm

#endif  // JITGEMM_CORE_OPERAND_ALIGNMENT_H_
