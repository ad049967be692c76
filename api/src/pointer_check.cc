#include "api/src/pointer_check.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/problem_signature.h"

namespace jitgemm {
namespace {

struct Range {
  uintptr_t begin;
  uintptr_t end;
};

Range RangeOf(const void* p, const Operand& op, int64_t rows, int64_t cols, int64_t batch) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  return {begin, begin + static_cast<uintptr_t>(OperandSpanBytes(op, rows, cols, batch))};
}

bool Overlap(Range x, Range y) { return x.begin < y.end && y.begin < x.end; }

bool SameLayout(const Operand& x, const Operand& y) {
  return x.type == y.type && x.layout == y.layout && x.ld == y.ld &&
         x.batch_stride == y.batch_stride;
}

}  // namespace

absl::Status CheckPointers(const GemmProblem& p, const GemmPointers& ptrs, int alignment) {
  const bool uses_c = p.epilogue.beta != 0.0f;
  const bool uses_bias = p.epilogue.bias != BiasMode::kNone;
  struct Named {
    const char* name;
    const void* ptr;
    bool used;
    DataType type;
  };
  const Named all[] = {{"a", ptrs.a, true, p.a.type},
                       {"b", ptrs.b, true, p.b.type},
                       {"c", ptrs.c, uses_c, p.c.type},
                       {"d", ptrs.d, true, p.d.type},
                       {"bias", ptrs.bias, uses_bias, p.d.type}};
  for (const Named& n : all) {
    if (!n.used) continue;
    if (n.ptr == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          n.name, ": null pointer", n.name[0] == 'c' ? " (epilogue.beta != 0 reads C)" : ""));
    }
    if (reinterpret_cast<uintptr_t>(n.ptr) % DataTypeSize(n.type) != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: pointer %p is not aligned to its %s element size", n.name, n.ptr,
                          DataTypeName(n.type)));
    }
    // The promise covers what a vector load of this operand could need, never
    // more than the element's own alignment requires of narrower types.
    if (reinterpret_cast<uintptr_t>(n.ptr) % alignment != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: pointer %p is not %d-byte aligned as the plan assumes "
                          "(Options::pointer_alignment); create the plan with a smaller alignment",
                          n.name, n.ptr, alignment));
    }
  }
  const int64_t batch = p.batch_count;
  const Range d = RangeOf(ptrs.d, p.d, p.m, p.n, batch);
  if (Overlap(d, RangeOf(ptrs.a, p.a, p.m, p.k, batch))) {
    return absl::InvalidArgumentError("d: output overlaps input a");
  }
  if (Overlap(d, RangeOf(ptrs.b, p.b, p.k, BColumns(p), batch))) {
    return absl::InvalidArgumentError("d: output overlaps input b");
  }
  if (uses_c && Overlap(d, RangeOf(ptrs.c, p.c, p.m, p.n, batch)) &&
      !(ptrs.c == ptrs.d && SameLayout(p.c, p.d))) {
    return absl::InvalidArgumentError(
        "d: output overlaps input c (in-place needs c == d with identical type, layout, ld and "
        "batch stride)");
  }
  if (uses_bias) {
    const int64_t len = p.epilogue.bias == BiasMode::kPerColumn ? BColumns(p) : p.m;
    Operand bias_op{p.d.type, Layout::kRowMajor, len, p.epilogue.bias_batch_stride};
    if (Overlap(d, RangeOf(ptrs.bias, bias_op, 1, len, batch))) {
      return absl::InvalidArgumentError("d: output overlaps bias");
    }
  }
  return absl::OkStatus();
}

}  // namespace jitgemm
