// How a GemmProblem is expressed as one cuBLASLt matmul: which operand is
// Lt's A and which its B, their transposes and column-major layouts, the
// compute type, and which of the problem's epilogue Lt can do itself.
//
// cuBLASLt (as used here) sees every matrix as column-major. A problem whose
// D is row-major is computed as the transposed product
//
//   D^T (N x M, column-major == D row-major) = B^T A^T,
//
// so Lt's A is the problem's B and Lt's B the problem's A ("swapped"). Lt's
// bias epilogue adds a vector along the rows of its (column-major) D, one
// value per row: after the swap that is the problem's per-column bias (the
// nn.Linear bias); without it, the per-row bias. Activations Lt has no
// epilogue for (gelu_erf, silu) are left to an elementwise pass that runs
// after the Lt call (`elementwise_after`); a bias on Lt's axis still goes to
// Lt's BIAS epilogue then, so the pass only activates (one fewer read of the
// bias per element, and the pass's loads stay 16-byte vectors). A bias on the
// other axis is added by the pass, before its activation.
//
// A gated problem (Gate::kHalves) is no single Lt call: Lt computes its
// inner product, A times all 2N columns of B = [B_gate | B_up] with the
// bias of 2N entries but no activation (GatedProductProblem), into a
// workspace W of D's type and order (jit/families/gate.h), and the gate
// pass writes D = act(gate) * up from it. The bias goes to Lt's BIAS
// epilogue on the same terms as above (row-major D: per column of W is Lt's
// axis), and otherwise to the gate pass (GatePassProblem).
//
// This file is pure logic (no CUDA header, no GPU): the backend turns the
// mapping into Lt descriptors and the tests check it on the CPU.
//
// Thread safety: plain functions and value types.
#ifndef JITGEMM_BACKENDS_CUBLAS_MAPPING_H_
#define JITGEMM_BACKENDS_CUBLAS_MAPPING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jitgemm/problem.h"

namespace jitgemm::backends {

// cuBLASLt epilogues used by the backend, named as in cublasLt.h
// (CUBLASLT_EPILOGUE_*). kGelu is the tanh approximation.
enum class LtEpilogue : int { kDefault, kRelu, kBias, kReluBias, kGelu, kGeluBias };

// Lt compute types: CUBLAS_COMPUTE_32F and CUBLAS_COMPUTE_32F_FAST_TF32.
enum class LtCompute : int { k32F, k32FFastTf32 };

// One matrix as Lt stores it: column-major, `rows` x `cols` before any
// transpose, `ld` >= rows, `batch_stride` in elements (0 when not batched,
// and 0 also broadcasts one matrix to every batch).
struct LtMatrix {
  DataType type = DataType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;
  int64_t batch_stride = 0;
};

// Lt computes, for each of `batch_count` batches,
//   D_lt (m x n) = epilogue(alpha * op_a(A_lt) op_b(B_lt) + beta * C_lt [+ bias])
// with op_a(A_lt) m x k and op_b(B_lt) k x n.
struct CublasLtMapping {
  // true: Lt computes D^T = B^T A^T; Lt's A is the problem's B, Lt's B the
  // problem's A, and Lt's m/n are the problem's n/m.
  bool swapped = false;
  bool transpose_a = false;  // op_a is a transpose (CUBLAS_OP_T)
  bool transpose_b = false;  // op_b is a transpose
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch_count = 1;
  LtMatrix a;  // Lt's A, as stored
  LtMatrix b;  // Lt's B, as stored
  LtMatrix c;  // same shape and order as d; describes d itself when beta == 0
  LtMatrix d;
  LtCompute compute = LtCompute::k32F;
  float alpha = 1.0f;
  float beta = 0.0f;
  LtEpilogue epilogue = LtEpilogue::kDefault;
  // Elements between the bias vectors of consecutive batches (Lt's
  // CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE); meaningful only with a bias epilogue.
  int64_t bias_batch_stride = 0;
  // true: an elementwise pass must follow the Lt call. The call leaves
  // alpha * A B + beta * C in D, plus the bias when `elementwise_bias` is
  // false; the pass then adds the bias (when `elementwise_bias`) and applies
  // the problem's activation. ElementwiseProblem says which.
  bool elementwise_after = false;
  bool elementwise_bias = false;
};

// Maps a canonical, valid problem (see Canonicalize / ValidateProblem) to one
// cuBLASLt matmul. `allow_tf32` selects CUBLAS_COMPUTE_32F_FAST_TF32 for f32
// inputs. Returns Unimplemented for what cuBLASLt cannot compute: an input /
// output type pair it has no kernel for (f16 inputs with bf16 output and the
// reverse), C of another type or storage order than D (when beta != 0),
// and a gated problem (map its GatedProductProblem instead).
absl::StatusOr<CublasLtMapping> MapToCublasLt(const GemmProblem& problem, bool allow_tf32);

// The inner product of a canonical, valid gated problem, as the ungated
// problem Lt computes: N = 2N, no gate, no activation, the problem's bias
// (per column of the 2N, or none), D = the workspace W
// (jit::GateProductOperand). Its D pointer is the workspace, not the
// problem's D.
GemmProblem GatedProductProblem(const GemmProblem& problem);

// What the gate pass after the Lt call of `mapping` (a mapping of
// GatedProductProblem(problem)) must do, as a problem: `problem` itself,
// less the bias when Lt's epilogue adds it.
GemmProblem GatePassProblem(const GemmProblem& problem, const CublasLtMapping& mapping);

// The same product with no Lt epilogue: bias and activation move to the
// elementwise pass. The backend uses it when Lt finds no algorithm for the
// fused epilogue. A mapping without bias or activation is returned unchanged.
CublasLtMapping WithoutLtEpilogue(const CublasLtMapping& mapping, const GemmProblem& problem);

// True when Lt's epilogue in `mapping` applies an activation (RELU, GELU,
// RELU_BIAS, GELU_BIAS).
bool LtActivates(const CublasLtMapping& mapping);

// The same product with the activation moved from Lt's epilogue to the
// elementwise pass: RELU_BIAS and GELU_BIAS become BIAS, RELU and GELU
// DEFAULT, and the pass only activates. Lt's fused activation is not always
// its fastest way: for some shapes (a GELU on a 16 x 8192 tile of D) its
// plain or BIAS product plus the pass took 15% less, so the tuner times both.
// A mapping where !LtActivates is returned unchanged.
CublasLtMapping WithActivationInPass(const CublasLtMapping& mapping);

// The problems of the passes that complete a canonical, valid problem's
// cuBLAS routes, as CreateCublasBackend makes them: the gate pass of a gated
// problem; the elementwise pass where Lt lacks the epilogue; and the
// activation pass of WithActivationInPass where Lt has it. Empty when every
// route is Lt alone or the problem has no Lt mapping. What a warm-up compiles
// so that the cuBLAS routes exist with compiling off.
std::vector<GemmProblem> CublasRoutePasses(const GemmProblem& problem, bool allow_tf32);

// What the elementwise pass after the Lt call of `mapping` must do, as a
// problem: `problem` itself, less the bias when Lt's epilogue adds it.
// REQUIRES: mapping.elementwise_after.
GemmProblem ElementwiseProblem(const GemmProblem& problem, const CublasLtMapping& mapping);

// True when the problem's bias lies along Lt's bias axis under `swapped`.
bool BiasFitsLtAxis(BiasMode bias, bool swapped);

// "DEFAULT", "RELU", "BIAS", "RELU_BIAS", "GELU", "GELU_BIAS".
const char* LtEpilogueName(LtEpilogue epilogue);

// e.g. "D^T=B^T A^T opA=N opB=T m=2048 n=1 k=4096 batch=1 32F RELU_BIAS".
std::string DebugString(const CublasLtMapping& mapping);

}  // namespace jitgemm::backends

#endif  // JITGEMM_BACKENDS_CUBLAS_MAPPING_H_
