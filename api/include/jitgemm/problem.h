// A GemmProblem describes one (optionally batched) matrix product with a fused
// epilogue, exactly enough to specialise a kernel for it:
//
//   D[b] = act(alpha * A[b] B[b] + beta * C[b] + bias[b])     for b in [0, batch)
//
// or, with a gated epilogue (Gate::kHalves: SwiGLU, GeGLU), one product of A
// with B = [B_gate | B_up] of 2N columns, the two halves multiplied:
//
//   D[b] = act(alpha * A[b] B_gate[b] + bias_gate[b]) * (alpha * A[b] B_up[b] + bias_up[b])
//
// A is M x K, B is K x N, C and D are M x N. Each operand has its own element
// type, storage order and leading dimension; batch strides are in elements and
// 0 broadcasts one matrix to every batch. Accumulation is always fp32.
//
// The grouped linear of a (B, G, Din) activation with one weight per group,
// written straight into a (B, G, Dout) output, is a batched problem over the G
// groups with no copies:
//
//   GemmProblem p;
//   p.m = B; p.n = Dout; p.k = Din; p.batch_count = G;
//   p.a = {DataType::kBF16, Layout::kRowMajor, /*ld=*/G * Din, /*batch_stride=*/Din};
//   p.b = {DataType::kBF16, Layout::kColMajor, /*ld=*/Din, /*batch_stride=*/Din * Dout};
//   p.d = {DataType::kBF16, Layout::kRowMajor, /*ld=*/G * Dout, /*batch_stride=*/Dout};
//
// (B col-major with ld = Din is nn.Linear's (Dout, Din) row-major weight.)
//
// Thread safety: a plain value type; copies are independent.
#ifndef JITGEMM_PROBLEM_H_
#define JITGEMM_PROBLEM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "jitgemm/export.h"

namespace jitgemm {

enum class DataType : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

// Storage order of one matrix operand. kRowMajor: consecutive elements of a row
// are adjacent and `ld` is the distance between rows.
enum class Layout : int { kRowMajor = 0, kColMajor = 1 };

enum class Activation : int {
  kNone = 0,
  kRelu = 1,
  kGeluTanh = 2,  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  kGeluErf = 3,   // 0.5 x (1 + erf(x / sqrt(2)))
  kSilu = 4,      // x / (1 + exp(-x))
};

// How the columns of B feed the epilogue.
enum class Gate : int {
  kNone = 0,
  // B is K x 2N: columns [0, N) are the gate projection, [N, 2N) the up
  // projection (nn.Linear weights W_gate, W_up of shape (N, K) stacked as
  // torch.cat([W_gate, W_up]) are this B, column-major with ld = K). The bias,
  // if any, is per column with 2N entries [bias_gate | bias_up]; beta must be 0.
  // D is M x N: act(gate) * up, any activation (kNone: the bilinear GLU).
  kHalves = 1,
};

// Where the bias vector is broadcast from. Its element type is the type of D.
enum class BiasMode : int {
  kNone = 0,
  kPerColumn = 1,  // bias[n], length N: nn.Linear's bias
  kPerRow = 2,     // bias[m], length M
};

// The batch stride value meaning "not given". A batched problem must give a
// stride for every operand it uses (0 is a valid, broadcasting stride).
inline constexpr int64_t kNoStride = -1;

struct Operand {
  DataType type = DataType::kF32;
  Layout layout = Layout::kRowMajor;
  // Leading dimension in elements; 0 means "packed" (the row or column length).
  int64_t ld = 0;
  // Distance between consecutive batch matrices in elements; kNoStride when the
  // problem is not batched.
  int64_t batch_stride = kNoStride;
};

// D = act(alpha * acc + beta * C + bias).
struct Epilogue {
  float alpha = 1.0f;
  float beta = 0.0f;  // C is read only when beta != 0
  BiasMode bias = BiasMode::kNone;
  // Batch stride of the bias vector in elements; 0 (the default) shares one
  // bias across the batch.
  int64_t bias_batch_stride = 0;
  Activation activation = Activation::kNone;
  Gate gate = Gate::kNone;
};

struct GemmProblem {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch_count = 1;
  Operand a;  // M x K
  Operand b;  // K x N (K x 2N with a gated epilogue: BColumns)
  Operand c;  // M x N, read when epilogue.beta != 0
  Operand d;  // M x N, written
  Epilogue epilogue;
};

// Convenience for the common case: D = A B with packed row-major operands of one type.
JITGEMM_EXPORT GemmProblem MakeGemm(int64_t m, int64_t n, int64_t k, DataType type);

// Columns of B: N, or 2N with a gated epilogue.
JITGEMM_EXPORT int64_t BColumns(const GemmProblem& problem);

// Checks the problem alone (no pointers): sizes, leading dimensions, strides,
// types and the 32-bit index range of every matrix. Returns InvalidArgument
// naming the offending field.
JITGEMM_EXPORT absl::Status ValidateProblem(const GemmProblem& problem);

// Returns the problem with packed leading dimensions (ld == 0) filled in.
JITGEMM_EXPORT GemmProblem Canonicalize(const GemmProblem& problem);

// A short human-readable form, e.g. "bf16 r.c->r 1x2048x4096 bias_col relu".
JITGEMM_EXPORT std::string DebugString(const GemmProblem& problem);

JITGEMM_EXPORT const char* DataTypeName(DataType type);  // "f32", "f16", "bf16"
JITGEMM_EXPORT int DataTypeSize(DataType type);
JITGEMM_EXPORT const char* ActivationName(Activation act);
JITGEMM_EXPORT const char* GateName(Gate gate);  // "none", "halves"

}  // namespace jitgemm

#endif  // JITGEMM_PROBLEM_H_
