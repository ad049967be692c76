#include "tools/bench/lt_baseline.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/cuda_status.h"
#include "core/operand_alignment.h"
#include "core/planned_problem.h"

namespace jitgemm::bench {
namespace {

absl::Status LtCheck(cublasStatus_t st, const char* what) {
  return CublasStatusToStatus(st, what, cublasLtGetStatusString(st));
}

#define BENCH_LT(expr)                                        \
  do {                                                        \
    ::absl::Status bench_lt_status_ = LtCheck((expr), #expr); \
    if (!bench_lt_status_.ok()) return bench_lt_status_;      \
  } while (0)

cudaDataType_t CudaType(DataType t) {
  return t == DataType::kF16 ? CUDA_R_16F : (t == DataType::kBF16 ? CUDA_R_16BF : CUDA_R_32F);
}

// A column-major Lt layout for a problem operand of rows x cols (problem
// view), transposed: Lt sees the operand's transpose, which a row-major
// operand stores without any op.
absl::Status TransposedLayout(const Operand& op, int64_t rows, int64_t cols, int64_t batch,
                              cublasLtMatrixLayout_t* out, bool* needs_op) {
  const bool row_major = op.layout == Layout::kRowMajor;
  *needs_op = !row_major;
  const uint64_t lt_rows = static_cast<uint64_t>(row_major ? cols : rows);
  const uint64_t lt_cols = static_cast<uint64_t>(row_major ? rows : cols);
  BENCH_LT(cublasLtMatrixLayoutCreate(out, CudaType(op.type), lt_rows, lt_cols, op.ld));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    const int64_t stride = op.batch_stride;
    BENCH_LT(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                              sizeof(count)));
    BENCH_LT(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                              &stride, sizeof(stride)));
  }
  return absl::OkStatus();
}

}  // namespace

int BaselinePointerAlignment(const Options& options) {
  return options.pointer_alignment < 16 ? options.pointer_alignment : 256;
}

absl::StatusOr<std::unique_ptr<LtBaseline>> LtBaseline::Create(
    cublasLtHandle_t handle, const GemmProblem& problem, LtBaselineEpilogue epilogue,
    void* workspace, size_t workspace_bytes, int pointer_alignment) {
  // A column-major D as the row-major D^T = B^T A^T, as the library plans it
  // (core/planned_problem.h); Run swaps A and B.
  const bool swap_ab = problem.d.layout == Layout::kColMajor;
  const GemmProblem p = swap_ab ? TransposeProblem(problem) : problem;
  // As the library's cuBLAS backend (backends/cublas_mapping.cc): Lt cannot
  // transpose C, and given a C of the other order it computed a wrong D.
  if (p.epilogue.beta != 0.0f && (p.c.layout != p.d.layout || p.c.type != p.d.type)) {
    return absl::UnimplementedError(
        "the bench's cuBLASLt baseline needs C of D's layout and type (Lt cannot transpose C)");
  }
  std::unique_ptr<LtBaseline> lt(new LtBaseline());
  lt->handle_ = handle;
  lt->alpha_ = p.epilogue.alpha;
  lt->beta_ = p.epilogue.beta;
  lt->workspace_ = workspace;
  lt->bias_ = epilogue != LtBaselineEpilogue::kNone;
  lt->swap_ab_ = swap_ab;

  // D^T (N x M) = B^T (N x K) * A^T (K x M): Lt's A is B, Lt's B is A.
  bool op_a = false, op_b = false, unused = false;
  absl::Status s = TransposedLayout(p.b, p.k, p.n, p.batch_count, &lt->a_, &op_a);
  if (s.ok()) s = TransposedLayout(p.a, p.m, p.k, p.batch_count, &lt->b_, &op_b);
  if (s.ok()) s = TransposedLayout(p.d, p.m, p.n, p.batch_count, &lt->d_, &unused);
  if (s.ok()) {
    const Operand& c = p.epilogue.beta != 0.0f ? p.c : p.d;
    s = TransposedLayout(c, p.m, p.n, p.batch_count, &lt->c_, &unused);
  }
  if (!s.ok()) return s;

  BENCH_LT(cublasLtMatmulDescCreate(&lt->op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const int32_t ta = op_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t tb = op_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  BENCH_LT(cublasLtMatmulDescSetAttribute(lt->op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  BENCH_LT(cublasLtMatmulDescSetAttribute(lt->op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  uint32_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  const char* epi_name = "plain";
  if (epilogue == LtBaselineEpilogue::kBias) {
    epi = CUBLASLT_EPILOGUE_BIAS;
    epi_name = "BIAS";
  } else if (epilogue == LtBaselineEpilogue::kReluBias) {
    epi = CUBLASLT_EPILOGUE_RELU_BIAS;
    epi_name = "RELU_BIAS";
  } else if (epilogue == LtBaselineEpilogue::kGeluBias) {
    epi = CUBLASLT_EPILOGUE_GELU_BIAS;
    epi_name = "GELU_BIAS";
  }
  BENCH_LT(
      cublasLtMatmulDescSetAttribute(lt->op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
  if (lt->bias_) {
    if (p.epilogue.bias != BiasMode::kPerColumn) {
      return absl::UnimplementedError("the bench's cuBLASLt baseline needs a per-column bias");
    }
    const int32_t bias_type = CudaType(p.d.type);
    BENCH_LT(cublasLtMatmulDescSetAttribute(lt->op_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                            &bias_type, sizeof(bias_type)));
    if (p.batch_count > 1) {
      const int64_t stride = p.epilogue.bias_batch_stride;
      BENCH_LT(cublasLtMatmulDescSetAttribute(lt->op_, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                              &stride, sizeof(stride)));
    }
  }

  cublasLtMatmulPreference_t pref = nullptr;
  BENCH_LT(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = workspace_bytes;
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  // An odd leading dimension or batch stride starts lines and batches less
  // aligned than the pointer, and Lt's heuristic, told nothing, assumes 256
  // bytes for every one of them.
  const Operand& c = p.epilogue.beta != 0.0f ? p.c : p.d;
  auto align = [&](const Operand& op, int64_t rows, int64_t cols) {
    return static_cast<uint32_t>(
        OperandAlignment(op, rows, cols, p.batch_count, pointer_alignment));
  };
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align(p.b, p.k, p.n)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align(p.a, p.m, p.k)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align(c, p.m, p.n)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align(p.d, p.m, p.n)}};
  for (const auto& [attr, bytes] : alignments) {
    if (st == CUBLAS_STATUS_SUCCESS) {
      st = cublasLtMatmulPreferenceSetAttribute(pref, attr, &bytes, sizeof(bytes));
    }
  }
  int returned = 0;
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulAlgoGetHeuristic(handle, lt->op_, lt->a_, lt->b_, lt->c_, lt->d_, pref, 1,
                                        &lt->algo_, &returned);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || returned == 0) {
    return absl::UnimplementedError(absl::StrFormat("cuBLASLt heuristic found no %s algorithm: %s",
                                                    epi_name, cublasLtGetStatusString(st)));
  }
  lt->describe_ = absl::StrFormat("cublasLt %s, workspace %d B", epi_name, lt->algo_.workspaceSize);
  return lt;
}

LtBaseline::~LtBaseline() {
  if (op_ != nullptr) cublasLtMatmulDescDestroy(op_);
  for (cublasLtMatrixLayout_t l : {a_, b_, c_, d_}) {
    if (l != nullptr) cublasLtMatrixLayoutDestroy(l);
  }
}

absl::Status LtBaseline::Run(const void* a, const void* b, const void* c, void* d, const void* bias,
                             cudaStream_t stream) {
  if (bias_) {
    BENCH_LT(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                            sizeof(bias)));
  }
  if (swap_ab_) std::swap(a, b);
  BENCH_LT(cublasLtMatmul(handle_, op_, &alpha_, b, a_, a, b_, &beta_, beta_ != 0.0f ? c : d, c_, d,
                          d_, &algo_.algo, workspace_, algo_.workspaceSize, stream));
  return absl::OkStatus();
}

std::string CublasLtVersionString() {
  const size_t v = cublasLtGetVersion();
  return absl::StrFormat("%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
}

}  // namespace jitgemm::bench
