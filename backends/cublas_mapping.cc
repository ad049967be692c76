#include "backends/cublas_mapping.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "jit/families/gate.h"

namespace jitgemm::backends {
namespace {

int64_t LtStride(const Operand& op, int64_t batch_count) {
  if (batch_count == 1 || op.batch_stride == kNoStride) return 0;
  return op.batch_stride;
}

// A problem operand of `rows` x `cols` (problem view) stored as Lt's
// column-major matrix. Row-major storage of R x C is column-major storage of
// C x R with the same leading dimension.
LtMatrix StoredAsColumnMajor(const Operand& op, int64_t rows, int64_t cols, int64_t batch_count) {
  LtMatrix m;
  m.type = op.type;
  const bool row_major = op.layout == Layout::kRowMajor;
  m.rows = row_major ? cols : rows;
  m.cols = row_major ? rows : cols;
  m.ld = op.ld;
  m.batch_stride = LtStride(op, batch_count);
  return m;
}

// cuBLASLt with CUBLAS_COMPUTE_32F and an f32 scale has kernels for these
// (A/B type, C/D type) pairs only.
bool LtHasTypePair(DataType ab, DataType cd) {
  switch (ab) {
    case DataType::kF32:
      return cd == DataType::kF32;
    case DataType::kF16:
      return cd == DataType::kF16 || cd == DataType::kF32;
    case DataType::kBF16:
      return cd == DataType::kBF16 || cd == DataType::kF32;
  }
  return false;
}

}  // namespace

bool BiasFitsLtAxis(BiasMode bias, bool swapped) {
  // Lt adds bias[row] of its column-major D: the problem's column index when
  // swapped (D^T), its row index otherwise.
  return bias == BiasMode::kNone ||
         (swapped ? bias == BiasMode::kPerColumn : bias == BiasMode::kPerRow);
}

absl::StatusOr<CublasLtMapping> MapToCublasLt(const GemmProblem& p, bool allow_tf32) {
  if (p.epilogue.gate != Gate::kNone) {
    // One Lt call would compute N of the 2N columns and no gate.
    return absl::UnimplementedError(
        "cuBLASLt: a gated problem is the product of its GatedProductProblem and a gate pass");
  }
  if (p.a.type != p.b.type) {
    return absl::UnimplementedError(absl::StrFormat("cuBLASLt: a.type %s and b.type %s differ",
                                                    DataTypeName(p.a.type),
                                                    DataTypeName(p.b.type)));
  }
  if (!LtHasTypePair(p.a.type, p.d.type)) {
    return absl::UnimplementedError(absl::StrFormat("cuBLASLt: no %s x %s -> %s matmul",
                                                    DataTypeName(p.a.type), DataTypeName(p.b.type),
                                                    DataTypeName(p.d.type)));
  }
  const bool uses_c = p.epilogue.beta != 0.0f;
  if (uses_c && p.c.type != p.d.type) {
    return absl::UnimplementedError(absl::StrFormat("cuBLASLt: c.type %s must equal d.type %s",
                                                    DataTypeName(p.c.type),
                                                    DataTypeName(p.d.type)));
  }
  if (uses_c && p.c.layout != p.d.layout) {
    return absl::UnimplementedError(
        "cuBLASLt: c.layout must equal d.layout (Lt cannot transpose C)");
  }

  CublasLtMapping map;
  map.swapped = p.d.layout == Layout::kRowMajor;
  map.batch_count = p.batch_count;
  map.k = p.k;
  const Operand& lt_a = map.swapped ? p.b : p.a;
  const Operand& lt_b = map.swapped ? p.a : p.b;
  if (map.swapped) {
    // D^T (N x M) = B^T (N x K) A^T (K x M).
    map.m = p.n;
    map.n = p.m;
    // B (K x N) row-major is stored as N x K column-major: B^T without op.
    map.a = StoredAsColumnMajor(lt_a, p.k, p.n, p.batch_count);
    map.transpose_a = lt_a.layout == Layout::kColMajor;
    // A (M x K) row-major is stored as K x M column-major: A^T without op.
    map.b = StoredAsColumnMajor(lt_b, p.m, p.k, p.batch_count);
    map.transpose_b = lt_b.layout == Layout::kColMajor;
  } else {
    // D (M x N) = A (M x K) B (K x N).
    map.m = p.m;
    map.n = p.n;
    map.a = StoredAsColumnMajor(lt_a, p.m, p.k, p.batch_count);
    map.transpose_a = lt_a.layout == Layout::kRowMajor;
    map.b = StoredAsColumnMajor(lt_b, p.k, p.n, p.batch_count);
    map.transpose_b = lt_b.layout == Layout::kRowMajor;
  }
  map.d = StoredAsColumnMajor(p.d, p.m, p.n, p.batch_count);
  map.c = uses_c ? StoredAsColumnMajor(p.c, p.m, p.n, p.batch_count) : map.d;

  map.compute =
      (p.a.type == DataType::kF32 && allow_tf32) ? LtCompute::k32FFastTf32 : LtCompute::k32F;
  map.alpha = p.epilogue.alpha;
  map.beta = p.epilogue.beta;

  const BiasMode bias = p.epilogue.bias;
  const Activation act = p.epilogue.activation;
  const bool has_bias = bias != BiasMode::kNone;
  const bool lt_activation =
      act == Activation::kNone || act == Activation::kRelu || act == Activation::kGeluTanh;
  if (!BiasFitsLtAxis(bias, map.swapped)) {
    // The bias must precede the activation, so the pass does both.
    map.epilogue = LtEpilogue::kDefault;
    map.elementwise_after = true;
    map.elementwise_bias = true;
    return map;
  }
  if (!lt_activation) {
    // Lt adds the bias (with alpha and beta); the pass only activates.
    map.epilogue = has_bias ? LtEpilogue::kBias : LtEpilogue::kDefault;
    map.elementwise_after = true;
    map.elementwise_bias = false;
  }
  switch (act) {
    case Activation::kRelu:
      map.epilogue = has_bias ? LtEpilogue::kReluBias : LtEpilogue::kRelu;
      break;
    case Activation::kGeluTanh:
      map.epilogue = has_bias ? LtEpilogue::kGeluBias : LtEpilogue::kGelu;
      break;
    case Activation::kNone:
      map.epilogue = has_bias ? LtEpilogue::kBias : LtEpilogue::kDefault;
      break;
    default:
      break;  // set above, with the pass
  }
  if (has_bias) map.bias_batch_stride = p.batch_count > 1 ? p.epilogue.bias_batch_stride : 0;
  return map;
}

CublasLtMapping WithoutLtEpilogue(const CublasLtMapping& mapping, const GemmProblem& p) {
  CublasLtMapping out = mapping;
  out.epilogue = LtEpilogue::kDefault;
  out.bias_batch_stride = 0;
  out.elementwise_bias = p.epilogue.bias != BiasMode::kNone;
  out.elementwise_after = out.elementwise_bias || p.epilogue.activation != Activation::kNone;
  return out;
}

bool LtActivates(const CublasLtMapping& mapping) {
  switch (mapping.epilogue) {
    case LtEpilogue::kRelu:
    case LtEpilogue::kReluBias:
    case LtEpilogue::kGelu:
    case LtEpilogue::kGeluBias:
      return true;
    case LtEpilogue::kDefault:
    case LtEpilogue::kBias:
      break;
  }
  return false;
}

CublasLtMapping WithActivationInPass(const CublasLtMapping& mapping) {
  if (!LtActivates(mapping)) return mapping;
  CublasLtMapping out = mapping;
  const bool bias =
      mapping.epilogue == LtEpilogue::kReluBias || mapping.epilogue == LtEpilogue::kGeluBias;
  out.epilogue = bias ? LtEpilogue::kBias : LtEpilogue::kDefault;
  out.elementwise_after = true;
  out.elementwise_bias = false;
  return out;
}

std::vector<GemmProblem> CublasRoutePasses(const GemmProblem& problem, bool allow_tf32) {
  std::vector<GemmProblem> out;
  if (problem.epilogue.gate != Gate::kNone) {
    absl::StatusOr<CublasLtMapping> mapping =
        MapToCublasLt(GatedProductProblem(problem), allow_tf32);
    if (mapping.ok()) out.push_back(GatePassProblem(problem, *mapping));
    return out;
  }
  absl::StatusOr<CublasLtMapping> mapping = MapToCublasLt(problem, allow_tf32);
  if (!mapping.ok()) return out;
  if (mapping->elementwise_after) out.push_back(ElementwiseProblem(problem, *mapping));
  if (LtActivates(*mapping)) {
    out.push_back(ElementwiseProblem(problem, WithActivationInPass(*mapping)));
  }
  return out;
}

GemmProblem ElementwiseProblem(const GemmProblem& problem, const CublasLtMapping& mapping) {
  GemmProblem out = problem;
  if (!mapping.elementwise_bias) {
    out.epilogue.bias = BiasMode::kNone;
    out.epilogue.bias_batch_stride = 0;
  }
  return out;
}

GemmProblem GatedProductProblem(const GemmProblem& problem) {
  GemmProblem out = problem;
  out.n = BColumns(problem);
  out.epilogue.gate = Gate::kNone;
  out.epilogue.activation = Activation::kNone;
  out.d = jit::GateProductOperand(problem);
  out.c = out.d;  // beta is 0: C is never read
  return out;
}

GemmProblem GatePassProblem(const GemmProblem& problem, const CublasLtMapping& mapping) {
  GemmProblem out = problem;
  if (!mapping.elementwise_bias) {
    out.epilogue.bias = BiasMode::kNone;
    out.epilogue.bias_batch_stride = 0;
  }
  return out;
}

const char* LtEpilogueName(LtEpilogue epilogue) {
  switch (epilogue) {
    case LtEpilogue::kDefault:
      return "DEFAULT";
    case LtEpilogue::kRelu:
      return "RELU";
    case LtEpilogue::kBias:
      return "BIAS";
    case LtEpilogue::kReluBias:
      return "RELU_BIAS";
    case LtEpilogue::kGelu:
      return "GELU";
    case LtEpilogue::kGeluBias:
      return "GELU_BIAS";
  }
  return "?";
}

std::string DebugString(const CublasLtMapping& m) {
  return absl::StrFormat(
      "%s opA=%s opB=%s m=%d n=%d k=%d batch=%d %s %s%s", m.swapped ? "D^T=B^T A^T" : "D=A B",
      m.transpose_a ? "T" : "N", m.transpose_b ? "T" : "N", m.m, m.n, m.k, m.batch_count,
      m.compute == LtCompute::k32FFastTf32 ? "32F_FAST_TF32" : "32F", LtEpilogueName(m.epilogue),
      !m.elementwise_after ? ""
      : m.elementwise_bias ? " +elementwise(bias)"
                           : " +elementwise");
}

}  // namespace jitgemm::backends
