#include "core/problem_signature.h"

#include <cstdint>
#include <string>

#include "absl/strings/str_format.h"

namespace jitgemm {

std::string ProblemSignature(const GemmProblem& p) {
  auto op = [](const Operand& o) {
    return absl::StrFormat("%s,%c,%d,%d", DataTypeName(o.type),
                           o.layout == Layout::kRowMajor ? 'r' : 'c', o.ld, o.batch_stride);
  };
  std::string sig = absl::StrFormat(
      "m=%d n=%d k=%d batch=%d a=%s b=%s c=%s d=%s alpha=%a beta=%a bias=%d bias_stride=%d act=%d",
      p.m, p.n, p.k, p.batch_count, op(p.a), op(p.b), op(p.c), op(p.d), p.epilogue.alpha,
      p.epilogue.beta, static_cast<int>(p.epilogue.bias), p.epilogue.bias_batch_stride,
      static_cast<int>(p.epilogue.activation));
  // Appended only when gated, so that every ungated key stays as it was.
  if (p.epilogue.gate != Gate::kNone) {
    absl::StrAppendFormat(&sig, " gate=%d", static_cast<int>(p.epilogue.gate));
  }
  return sig;
}

int64_t OperandSpanBytes(const Operand& op, int64_t rows, int64_t cols, int64_t batch) {
  const int64_t row_len = op.layout == Layout::kRowMajor ? cols : rows;
  const int64_t lines = op.layout == Layout::kRowMajor ? rows : cols;
  int64_t elems = (lines - 1) * op.ld + row_len;
  if (batch > 1 && op.batch_stride > 0) elems += (batch - 1) * op.batch_stride;
  return elems * DataTypeSize(op.type);
}

}  // namespace jitgemm
