// Validation and canonical form of GemmProblem.
#include "jitgemm/problem.h"

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace jitgemm {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

bool ValidType(DataType t) {
  return t == DataType::kF32 || t == DataType::kF16 || t == DataType::kBF16;
}
bool ValidLayout(Layout l) { return l == Layout::kRowMajor || l == Layout::kColMajor; }

// Rows and columns of an operand as stored: (rows, cols) of the logical matrix.
struct Extent {
  int64_t rows;
  int64_t cols;
};

int64_t PackedLd(const Operand& op, Extent e) {
  return op.layout == Layout::kRowMajor ? e.cols : e.rows;
}

absl::Status CheckOperand(const char* name, const Operand& op, Extent e, int64_t batch,
                          bool is_output) {
  if (!ValidType(op.type)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ".type: unknown data type ", static_cast<int>(op.type)));
  }
  if (!ValidLayout(op.layout)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ".layout: unknown layout ", static_cast<int>(op.layout)));
  }
  const int64_t row_len = PackedLd(op, e);
  const int64_t lines = op.layout == Layout::kRowMajor ? e.rows : e.cols;
  if (op.ld < 0) {
    return absl::InvalidArgumentError(absl::StrFormat("ld%s: %d is negative", name, op.ld));
  }
  const int64_t ld = op.ld == 0 ? row_len : op.ld;
  if (ld < row_len) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ld%s: %d is smaller than the %s length %d of the %s operand", name, ld,
                        op.layout == Layout::kRowMajor ? "row" : "column", row_len,
                        op.layout == Layout::kRowMajor ? "row-major" : "column-major"));
  }
  // Kernels index one batch matrix with 32-bit offsets.
  if ((lines - 1) > (kInt32Max - row_len) / ld) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ld%s: the %s matrix spans more than 2^31-1 elements (32-bit index overflow)", name, name));
  }
  if (batch > 1) {
    if (op.batch_stride == kNoStride) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "stride_%s: batch_count is %d but %s.batch_stride is not given", name, batch, name));
    }
    if (op.batch_stride < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("stride_%s: %d is negative", name, op.batch_stride));
    }
    if (op.batch_stride > 0 &&
        op.batch_stride > (std::numeric_limits<int64_t>::max() / 2) / (batch - 1)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("stride_%s: %d x batch_count overflows 64 bits", name, op.batch_stride));
    }
    if (is_output) {
      const int64_t span = (lines - 1) * ld + row_len;  // elements one matrix touches
      // Batches must not write the same element: either each matrix lies past
      // the previous one, or they interleave within each row (seed 001's
      // (B, G, Dout) output: stride = Dout, ld = G * Dout).
      const bool disjoint = op.batch_stride >= span;
      const bool interleaved =
          op.batch_stride >= row_len && (batch - 1) * op.batch_stride + row_len <= ld;
      if (!disjoint && !interleaved) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "stride_%s: %d makes the %d output matrices overlap", name, op.batch_stride, batch));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

const char* DataTypeName(DataType type) {
  switch (type) {
    case DataType::kF32:
      return "f32";
    case DataType::kF16:
      return "f16";
    case DataType::kBF16:
      return "bf16";
  }
  return "?";
}

const char* GateName(Gate gate) {
  switch (gate) {
    case Gate::kNone:
      return "none";
    case Gate::kHalves:
      return "halves";
  }
  return "?";
}

int64_t BColumns(const GemmProblem& p) { return p.epilogue.gate == Gate::kHalves ? 2 * p.n : p.n; }

int DataTypeSize(DataType type) { return type == DataType::kF32 ? 4 : 2; }

const char* ActivationName(Activation act) {
  switch (act) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kGeluTanh:
      return "gelu_tanh";
    case Activation::kGeluErf:
      return "gelu_erf";
    case Activation::kSilu:
      return "silu";
  }
  return "?";
}

GemmProblem MakeGemm(int64_t m, int64_t n, int64_t k, DataType type) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a.type = p.b.type = p.c.type = p.d.type = type;
  return p;
}

absl::Status ValidateProblem(const GemmProblem& p) {
  if (p.m <= 0) return absl::InvalidArgumentError(absl::StrCat("m: must be >= 1, got ", p.m));
  if (p.n <= 0) return absl::InvalidArgumentError(absl::StrCat("n: must be >= 1, got ", p.n));
  if (p.k <= 0) return absl::InvalidArgumentError(absl::StrCat("k: must be >= 1, got ", p.k));
  if (p.m > kInt32Max || p.n > kInt32Max || p.k > kInt32Max) {
    return absl::InvalidArgumentError(
        absl::StrFormat("m, n, k: each must be below 2^31 (got %d x %d x %d)", p.m, p.n, p.k));
  }
  if (p.batch_count < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_count: must be >= 1, got ", p.batch_count));
  }
  if (p.batch_count > kInt32Max) {
    return absl::InvalidArgumentError("batch_count: must be below 2^31");
  }
  const int gate = static_cast<int>(p.epilogue.gate);
  if (gate < 0 || gate > static_cast<int>(Gate::kHalves)) {
    return absl::InvalidArgumentError(absl::StrCat("epilogue.gate: unknown gate ", gate));
  }
  if (p.epilogue.gate != Gate::kNone && p.n > kInt32Max / 2) {
    return absl::InvalidArgumentError(
        absl::StrFormat("n: a gated B has 2N columns, which must be below 2^31 (N = %d)", p.n));
  }
  const int64_t batch = p.batch_count;
  const bool uses_c = p.epilogue.beta != 0.0f;
  auto s = CheckOperand("a", p.a, {p.m, p.k}, batch, false);
  if (s.ok()) s = CheckOperand("b", p.b, {p.k, BColumns(p)}, batch, false);
  if (s.ok() && uses_c) s = CheckOperand("c", p.c, {p.m, p.n}, batch, false);
  if (s.ok()) s = CheckOperand("d", p.d, {p.m, p.n}, batch, true);
  if (!s.ok()) return s;
  if (p.a.type != p.b.type) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "b.type: %s with a.type %s is an unsupported type combination (A and B must match)",
        DataTypeName(p.b.type), DataTypeName(p.a.type)));
  }
  if (p.a.type == DataType::kF32 && p.d.type != DataType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrFormat("d.type: %s output from f32 inputs is an unsupported type combination",
                        DataTypeName(p.d.type)));
  }
  const auto bias = p.epilogue.bias;
  if (bias != BiasMode::kNone && bias != BiasMode::kPerColumn && bias != BiasMode::kPerRow) {
    return absl::InvalidArgumentError(
        absl::StrCat("epilogue.bias: unknown bias mode ", static_cast<int>(bias)));
  }
  if (p.epilogue.bias_batch_stride < 0) {
    return absl::InvalidArgumentError(absl::StrCat("epilogue.bias_batch_stride: must be >= 0, got ",
                                                   p.epilogue.bias_batch_stride));
  }
  const int act = static_cast<int>(p.epilogue.activation);
  if (act < 0 || act > static_cast<int>(Activation::kSilu)) {
    return absl::InvalidArgumentError(
        absl::StrCat("epilogue.activation: unknown activation ", act));
  }
  if (!(p.epilogue.alpha == p.epilogue.alpha) || !(p.epilogue.beta == p.epilogue.beta)) {
    return absl::InvalidArgumentError("epilogue.alpha/beta: NaN is not a valid scale");
  }
  if (p.epilogue.gate != Gate::kNone) {
    if (uses_c) {
      return absl::InvalidArgumentError(
          absl::StrCat("epilogue.beta: a gated epilogue reads no C (beta must be 0, got ",
                       p.epilogue.beta, ")"));
    }
    if (bias == BiasMode::kPerRow) {
      return absl::InvalidArgumentError(
          "epilogue.bias: a gated epilogue takes a per-column bias of 2N entries, not a per-row "
          "one");
    }
  }
  return absl::OkStatus();
}

GemmProblem Canonicalize(const GemmProblem& in) {
  GemmProblem p = in;
  auto fill = [](Operand& op, int64_t rows, int64_t cols) {
    if (op.ld == 0) op.ld = op.layout == Layout::kRowMajor ? cols : rows;
  };
  fill(p.a, p.m, p.k);
  fill(p.b, p.k, BColumns(p));
  fill(p.c, p.m, p.n);
  fill(p.d, p.m, p.n);
  if (p.batch_count == 1) {
    p.a.batch_stride = p.b.batch_stride = p.c.batch_stride = p.d.batch_stride = kNoStride;
    p.epilogue.bias_batch_stride = 0;
  }
  if (p.epilogue.beta == 0.0f) {
    // C is never read: its description must not split cache keys.
    p.c = p.d;
  }
  if (p.epilogue.bias == BiasMode::kNone) p.epilogue.bias_batch_stride = 0;
  return p;
}

std::string DebugString(const GemmProblem& p) {
  auto l = [](const Operand& o) { return o.layout == Layout::kRowMajor ? "r" : "c"; };
  std::string s =
      absl::StrFormat("%s%s %s%s.%s->%s %dx%dx%d", DataTypeName(p.a.type),
                      p.d.type != p.a.type ? absl::StrCat("->", DataTypeName(p.d.type)) : "", "",
                      l(p.a), l(p.b), l(p.d), p.m, p.n, p.k);
  if (p.batch_count > 1) absl::StrAppend(&s, " batch=", p.batch_count);
  if (p.epilogue.beta != 0.0f) absl::StrAppend(&s, " beta=", p.epilogue.beta);
  if (p.epilogue.alpha != 1.0f) absl::StrAppend(&s, " alpha=", p.epilogue.alpha);
  if (p.epilogue.bias == BiasMode::kPerColumn) absl::StrAppend(&s, " bias_col");
  if (p.epilogue.bias == BiasMode::kPerRow) absl::StrAppend(&s, " bias_row");
  if (p.epilogue.activation != Activation::kNone) {
    absl::StrAppend(&s, " ", ActivationName(p.epilogue.activation));
  }
  if (p.epilogue.gate != Gate::kNone) absl::StrAppend(&s, " gate=", GateName(p.epilogue.gate));
  return s;
}

}  // namespace jitgemm
