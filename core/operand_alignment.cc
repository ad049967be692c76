#include "core/operand_alignment.h"

#include <cstdint>

#include "jitgemm/problem.h"

namespace jitgemm {

int LargestPow2Divisor(int64_t bytes, int cap) {
  int a = cap;
  while (a > 1 && bytes % a != 0) a /= 2;
  return a;
}

int OperandAlignment(const Operand& op, int64_t rows, int64_t cols, int64_t batch,
                     int pointer_alignment) {
  const int64_t esize = DataTypeSize(op.type);
  int align = LargestPow2Divisor(pointer_alignment, 256);
  const int64_t lines = op.layout == Layout::kRowMajor ? rows : cols;
  if (lines > 1) align = LargestPow2Divisor(op.ld * esize, align);
  if (batch > 1 && op.batch_stride > 0) {
    align = LargestPow2Divisor(op.batch_stride * esize, align);
  }
  return align;
}

int BiasAlignment(int64_t batch_stride, int64_t batch, DataType type, int pointer_alignment) {
  int align = LargestPow2Divisor(pointer_alignment, 256);
  if (batch > 1 && batch_stride > 0) {
    align = LargestPow2Divisor(batch_stride * DataTypeSize(type), align);
  }
  return align;
}

int BiasAlignment(const GemmProblem& p, int pointer_alignment) {
  return BiasAlignment(p.epilogue.bias_batch_stride, p.batch_count, p.d.type, pointer_alignment);
}

}  // namespace jitgemm
