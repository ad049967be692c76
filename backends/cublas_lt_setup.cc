#include "backends/cublas_lt_setup.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/const_init.h"
#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "core/cuda_runtime_status.h"
#include "core/cuda_status.h"
#include "core/operand_alignment.h"
#include "core/status_macros.h"

namespace jitgemm::backends {
namespace {

cudaDataType_t LtType(DataType t) {
  switch (t) {
    case DataType::kF16:
      return CUDA_R_16F;
    case DataType::kBF16:
      return CUDA_R_16BF;
    case DataType::kF32:
      break;
  }
  return CUDA_R_32F;
}

cublasLtEpilogue_t LtEpilogueValue(LtEpilogue e) {
  switch (e) {
    case LtEpilogue::kRelu:
      return CUBLASLT_EPILOGUE_RELU;
    case LtEpilogue::kBias:
      return CUBLASLT_EPILOGUE_BIAS;
    case LtEpilogue::kReluBias:
      return CUBLASLT_EPILOGUE_RELU_BIAS;
    case LtEpilogue::kGelu:
      return CUBLASLT_EPILOGUE_GELU;
    case LtEpilogue::kGeluBias:
      return CUBLASLT_EPILOGUE_GELU_BIAS;
    case LtEpilogue::kDefault:
      break;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

template <typename T>
absl::Status SetLayoutAttr(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                           const T& value, const char* what) {
  return CublasStatus(cublasLtMatrixLayoutSetAttribute(layout, attr, &value, sizeof(value)), what);
}

template <typename T>
absl::Status SetPrefAttr(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                         const T& value, const char* what) {
  return CublasStatus(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)),
                      what);
}

absl::Status MakeLayout(const LtMatrix& m, int64_t batch_count, cublasLtMatrixLayout_t* out) {
  JITGEMM_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutCreate(out, LtType(m.type), static_cast<uint64_t>(m.rows),
                                              static_cast<uint64_t>(m.cols), m.ld),
                   "cublasLtMatrixLayoutCreate"));
  if (batch_count > 1) {
    JITGEMM_RETURN_IF_ERROR(SetLayoutAttr(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                          static_cast<int32_t>(batch_count), "layout BATCH_COUNT"));
    JITGEMM_RETURN_IF_ERROR(SetLayoutAttr(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                          static_cast<int64_t>(m.batch_stride),
                                          "layout STRIDED_BATCH_OFFSET"));
  }
  return absl::OkStatus();
}

// An address with exactly `alignment` bytes of alignment, for the heuristic:
// Lt reads the bias pointer's value (never the memory) to know its alignment.
const void* AddressWithAlignment(int alignment) {
  return reinterpret_cast<const void*>(static_cast<uintptr_t>(4096 + alignment));
}

// What cuBLASLt may assume of every column of every batch matrix of `x` (Lt's
// matrices are column-major). Its heuristic reads only the alignment it is
// told here, not the leading dimension's or the batch stride's.
uint32_t LtAlignment(const LtMatrix& x, int64_t batch_count, int pointer_alignment) {
  const Operand op{x.type, Layout::kColMajor, x.ld, x.batch_stride};
  return static_cast<uint32_t>(std::max(
      OperandAlignment(op, x.rows, x.cols, batch_count, pointer_alignment), DataTypeSize(x.type)));
}

}  // namespace

bool HasLtBias(LtEpilogue e) {
  return e == LtEpilogue::kBias || e == LtEpilogue::kReluBias || e == LtEpilogue::kGeluBias;
}

absl::Status CublasStatus(cublasStatus_t st, const char* what) {
  return CublasStatusToStatus(st, what, cublasLtGetStatusString(st));
}

// The device of the calling thread's current context, or FailedPrecondition
// when the process has no usable GPU.
absl::StatusOr<int> CurrentDevice() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    const absl::Status s = CudaRuntimeStatus(err, "cudaGetDeviceCount");
    return absl::FailedPreconditionError(absl::StrCat("no CUDA device: ", s.message()));
  }
  if (count == 0) return absl::FailedPreconditionError("no CUDA device: cudaGetDeviceCount is 0");
  int device = 0;
  JITGEMM_RETURN_IF_ERROR(CudaRuntimeStatus(cudaGetDevice(&device), "cudaGetDevice"));
  return device;
}

// One cuBLASLt handle per device for the whole process, created on first use.
// Handles are never destroyed: plans may outlive static destruction order.
absl::StatusOr<cublasLtHandle_t> LtHandleForDevice(int device) {
  ABSL_CONST_INIT static absl::Mutex mu(absl::kConstInit);
  static auto* handles = new std::map<int, cublasLtHandle_t>();  // guarded by mu
  absl::MutexLock lock(&mu);
  auto it = handles->find(device);
  if (it != handles->end()) return it->second;
  cublasLtHandle_t handle = nullptr;
  JITGEMM_RETURN_IF_ERROR(CublasStatus(cublasLtCreate(&handle), "cublasLtCreate"));
  handles->emplace(device, handle);
  return handle;
}

LtDescriptors::~LtDescriptors() {
  if (op != nullptr) cublasLtMatmulDescDestroy(op);
  for (cublasLtMatrixLayout_t l : {a, b, c, d}) {
    if (l != nullptr) cublasLtMatrixLayoutDestroy(l);
  }
}

absl::Status MakeDescriptors(const CublasLtMapping& m, int pointer_alignment, LtDescriptors* out) {
  const cublasComputeType_t compute =
      m.compute == LtCompute::k32FFastTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  JITGEMM_RETURN_IF_ERROR(CublasStatus(cublasLtMatmulDescCreate(&out->op, compute, CUDA_R_32F),
                                       "cublasLtMatmulDescCreate"));
  const int32_t ta = m.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t tb = m.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  JITGEMM_RETURN_IF_ERROR(SetDescAttr(out->op, CUBLASLT_MATMUL_DESC_TRANSA, ta, "TRANSA"));
  JITGEMM_RETURN_IF_ERROR(SetDescAttr(out->op, CUBLASLT_MATMUL_DESC_TRANSB, tb, "TRANSB"));
  const uint32_t epilogue = LtEpilogueValue(m.epilogue);
  JITGEMM_RETURN_IF_ERROR(
      SetDescAttr(out->op, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue, "EPILOGUE"));
  if (HasLtBias(m.epilogue)) {
    const int32_t bias_type = LtType(m.d.type);
    JITGEMM_RETURN_IF_ERROR(
        SetDescAttr(out->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type, "BIAS_DATA_TYPE"));
    if (m.batch_count > 1) {
      JITGEMM_RETURN_IF_ERROR(SetDescAttr(out->op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                          static_cast<int64_t>(m.bias_batch_stride),
                                          "BIAS_BATCH_STRIDE"));
    }
    const int bias_alignment =
        BiasAlignment(m.bias_batch_stride, m.batch_count, m.d.type, pointer_alignment);
    const void* bias = AddressWithAlignment(std::max(bias_alignment, DataTypeSize(m.d.type)));
    JITGEMM_RETURN_IF_ERROR(
        SetDescAttr(out->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias, "BIAS_POINTER"));
  }
  JITGEMM_RETURN_IF_ERROR(MakeLayout(m.a, m.batch_count, &out->a));
  JITGEMM_RETURN_IF_ERROR(MakeLayout(m.b, m.batch_count, &out->b));
  JITGEMM_RETURN_IF_ERROR(MakeLayout(m.c, m.batch_count, &out->c));
  JITGEMM_RETURN_IF_ERROR(MakeLayout(m.d, m.batch_count, &out->d));
  return absl::OkStatus();
}

// The heuristic's first choice with at most `max_workspace` bytes of
// workspace; Unimplemented when Lt has none.
absl::StatusOr<cublasLtMatmulHeuristicResult_t> BestAlgo(cublasLtHandle_t handle,
                                                         const CublasLtMapping& m,
                                                         const LtDescriptors& desc,
                                                         uint64_t max_workspace,
                                                         int pointer_alignment, int index) {
  cublasLtMatmulPreference_t pref = nullptr;
  JITGEMM_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate"));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, cublasStatus_t (*)(cublasLtMatmulPreference_t)>
      pref_owner(pref, &cublasLtMatmulPreferenceDestroy);
  JITGEMM_RETURN_IF_ERROR(SetPrefAttr(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, max_workspace,
                                      "PREF_MAX_WORKSPACE_BYTES"));
  auto align = [&](const LtMatrix& x) { return LtAlignment(x, m.batch_count, pointer_alignment); };
  JITGEMM_RETURN_IF_ERROR(SetPrefAttr(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align(m.a),
                                      "PREF_MIN_ALIGNMENT_A"));
  JITGEMM_RETURN_IF_ERROR(SetPrefAttr(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align(m.b),
                                      "PREF_MIN_ALIGNMENT_B"));
  JITGEMM_RETURN_IF_ERROR(SetPrefAttr(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align(m.c),
                                      "PREF_MIN_ALIGNMENT_C"));
  JITGEMM_RETURN_IF_ERROR(SetPrefAttr(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align(m.d),
                                      "PREF_MIN_ALIGNMENT_D"));
  std::vector<cublasLtMatmulHeuristicResult_t> results(index + 1);
  int returned = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
      handle, desc.op, desc.a, desc.b, desc.c, desc.d, pref, index + 1, results.data(), &returned);
  if (st != CUBLAS_STATUS_SUCCESS || returned == 0) {
    return absl::UnimplementedError(
        absl::StrFormat("cuBLASLt has no algorithm for %s with %d bytes of workspace (%s)",
                        DebugString(m), max_workspace, cublasLtGetStatusString(st)));
  }
  if (returned <= index) {
    return absl::NotFoundError(
        absl::StrFormat("cuBLASLt offers %d algorithms, not #%d", returned, index));
  }
  return results[index];
}

}  // namespace jitgemm::backends
