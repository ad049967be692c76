#include "backends/cublas_backend.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/const_init.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "backends/cublas_mapping.h"
#include "core/cuda_runtime_status.h"
#include "core/status_macros.h"

namespace jitgemm {
namespace {

using backends::CublasLtMapping;
using backends::LtCompute;
using backends::LtEpilogue;
using backends::LtMatrix;

// The most workspace the heuristic may ask for; the backend allocates only
// what the chosen algorithm needs.
constexpr uint64_t kMaxWorkspaceBytes = 32ull << 20;

absl::Status CudaStatus(cudaError_t err, const char* what) { return CudaRuntimeStatus(err, what); }

absl::Status CublasStatus(cublasStatus_t st, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const std::string msg = absl::StrFormat("%s: %s", what, cublasLtGetStatusString(st));
  switch (st) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return absl::FailedPreconditionError(msg);
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return absl::UnimplementedError(msg);
    case CUBLAS_STATUS_ALLOC_FAILED:  // as core/cuda_status.h maps out of memory
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

// The device of the calling thread's current context, or FailedPrecondition
// when the process has no usable GPU.
absl::StatusOr<int> CurrentDevice() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    const absl::Status s = CudaStatus(err, "cudaGetDeviceCount");
    return absl::FailedPreconditionError(absl::StrCat("no CUDA device: ", s.message()));
  }
  if (count == 0) return absl::FailedPreconditionError("no CUDA device: cudaGetDeviceCount is 0");
  int device = 0;
  JITGEMM_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
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

bool HasLtBias(LtEpilogue e) {
  return e == LtEpilogue::kBias || e == LtEpilogue::kReluBias || e == LtEpilogue::kGeluBias;
}

template <typename T>
absl::Status SetDescAttr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                         const T& value, const char* what) {
  return CublasStatus(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)), what);
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

// The Lt descriptors of one mapping. Owns them.
struct LtDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;

  LtDescriptors() = default;
  LtDescriptors(const LtDescriptors&) = delete;
  LtDescriptors& operator=(const LtDescriptors&) = delete;
  ~LtDescriptors() {
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
    for (cublasLtMatrixLayout_t l : {a, b, c, d}) {
      if (l != nullptr) cublasLtMatrixLayoutDestroy(l);
    }
  }
};

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
    const void* bias = AddressWithAlignment(std::max(pointer_alignment, DataTypeSize(m.d.type)));
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
                                                         int pointer_alignment, int index = 0) {
  cublasLtMatmulPreference_t pref = nullptr;
  JITGEMM_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate"));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, cublasStatus_t (*)(cublasLtMatmulPreference_t)>
      pref_owner(pref, &cublasLtMatmulPreferenceDestroy);
  JITGEMM_RETURN_IF_ERROR(SetPrefAttr(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, max_workspace,
                                      "PREF_MAX_WORKSPACE_BYTES"));
  auto align = [&](DataType t) {
    return static_cast<uint32_t>(std::max(pointer_alignment, DataTypeSize(t)));
  };
  JITGEMM_RETURN_IF_ERROR(SetPrefAttr(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                      align(m.a.type), "PREF_MIN_ALIGNMENT_A"));
  JITGEMM_RETURN_IF_ERROR(SetPrefAttr(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                      align(m.b.type), "PREF_MIN_ALIGNMENT_B"));
  JITGEMM_RETURN_IF_ERROR(SetPrefAttr(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                      align(m.c.type), "PREF_MIN_ALIGNMENT_C"));
  JITGEMM_RETURN_IF_ERROR(SetPrefAttr(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                      align(m.d.type), "PREF_MIN_ALIGNMENT_D"));
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

class CublasLtBackend final : public Backend {
 public:
  CublasLtBackend(cublasLtHandle_t handle, CublasLtMapping mapping,
                  std::unique_ptr<LtDescriptors> desc, cublasLtMatmulHeuristicResult_t best,
                  absl::StatusOr<cublasLtMatmulHeuristicResult_t> no_workspace, void* workspace,
                  std::unique_ptr<ElementwiseEpilogue> elementwise)
      : handle_(handle),
        mapping_(std::move(mapping)),
        desc_(std::move(desc)),
        best_(best),
        no_workspace_(std::move(no_workspace)),
        workspace_(workspace),
        elementwise_(std::move(elementwise)) {
    describe_ = absl::StrFormat("cublasLt %s (%s, workspace %d B)",
                                backends::LtEpilogueName(mapping_.epilogue), DebugString(mapping_),
                                best_.workspaceSize);
    if (elementwise_ != nullptr) absl::StrAppend(&describe_, " + ", elementwise_->Describe());
  }

  ~CublasLtBackend() override {
    // Errors are ignored: at process exit the runtime may already be gone.
    if (workspace_ != nullptr) cudaFree(workspace_);
  }

  absl::Status Run(const GemmPointers& p, CUstream stream) const override {
    const void* lt_a = mapping_.swapped ? p.b : p.a;
    const void* lt_b = mapping_.swapped ? p.a : p.b;
    const void* c = mapping_.beta != 0.0f ? p.c : p.d;
    // Always the best algorithm with the plan's workspace: a plan's runs are
    // ordered (plan.h), so no two runs share the scratch memory at once. An
    // earlier rule gave the workspace to the first stream that ran the plan,
    // which was the tuner's private stream, leaving every user run on the
    // slower workspace-free algorithm (5% at 4096^3 fp16 on the H100).
    const cublasLtMatmulAlgo_t* algo = &best_.algo;
    void* workspace = workspace_;
    size_t workspace_bytes = best_.workspaceSize;
    absl::Status status;
    if (HasLtBias(mapping_.epilogue)) {
      // The bias pointer lives in the shared descriptor: set it and launch
      // under one lock so concurrent runs never see each other's pointer.
      absl::MutexLock lock(&bias_mu_);
      status = SetDescAttr(desc_->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, p.bias, "BIAS_POINTER");
      if (status.ok())
        status = Matmul(lt_a, lt_b, c, p.d, algo, workspace, workspace_bytes, stream);
    } else {
      status = Matmul(lt_a, lt_b, c, p.d, algo, workspace, workspace_bytes, stream);
    }
    if (!status.ok()) return status;
    if (elementwise_ != nullptr) return elementwise_->Run(p.d, p.bias, stream);
    return absl::OkStatus();
  }

  std::string Describe() const override { return describe_; }
  // Marks a backend built on the heuristic's algorithm number `index` (> 0).
  void NameAlgorithm(int index) { absl::StrAppend(&describe_, " algo #", index); }

 private:
  absl::Status Matmul(const void* a, const void* b, const void* c, void* d,
                      const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
                      CUstream stream) const {
    return CublasStatus(cublasLtMatmul(handle_, desc_->op, &mapping_.alpha, a, desc_->a, b,
                                       desc_->b, &mapping_.beta, c, desc_->c, d, desc_->d, algo,
                                       workspace, workspace_bytes, stream),
                        "cublasLtMatmul");
  }

  cublasLtHandle_t handle_;
  CublasLtMapping mapping_;
  std::unique_ptr<LtDescriptors> desc_;
  cublasLtMatmulHeuristicResult_t best_;
  absl::StatusOr<cublasLtMatmulHeuristicResult_t> no_workspace_;
  void* workspace_;
  std::unique_ptr<ElementwiseEpilogue> elementwise_;
  std::string describe_;
  mutable absl::Mutex bias_mu_;
};

std::string ElementwiseReason(const GemmProblem& p, const CublasLtMapping& m) {
  const Activation act = p.epilogue.activation;
  if (act == Activation::kGeluErf || act == Activation::kSilu) {
    return absl::StrCat("cuBLASLt has no ", ActivationName(act), " epilogue");
  }
  if (!backends::BiasFitsLtAxis(p.epilogue.bias, m.swapped)) {
    return absl::StrCat("cuBLASLt's bias runs along the other axis of D (",
                        p.epilogue.bias == BiasMode::kPerRow ? "per-row" : "per-column",
                        " bias with ",
                        p.d.layout == Layout::kRowMajor ? "row-major" : "column-major", " D)");
  }
  return "cuBLASLt has no algorithm for the fused epilogue";
}

}  // namespace

absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> UnimplementedElementwiseEpilogue(
    const GemmProblem& problem, const Options& options) {
  return absl::UnimplementedError(absl::StrFormat(
      "the elementwise pass after a cuBLAS product (bias %s, %s) is not available yet",
      problem.epilogue.bias == BiasMode::kNone
          ? "none"
          : (problem.epilogue.bias == BiasMode::kPerRow ? "per-row" : "per-column"),
      ActivationName(problem.epilogue.activation)));
}

absl::StatusOr<std::unique_ptr<Backend>> CreateCublasBackend(
    const GemmProblem& problem, const Options& options,
    const ElementwiseEpilogueFactory& elementwise, int algorithm) {
  JITGEMM_ASSIGN_OR_RETURN(const int device, CurrentDevice());
  JITGEMM_ASSIGN_OR_RETURN(CublasLtMapping mapping,
                           backends::MapToCublasLt(problem, options.allow_tf32));
  JITGEMM_ASSIGN_OR_RETURN(cublasLtHandle_t handle, LtHandleForDevice(device));
  const int alignment = options.pointer_alignment;

  auto desc = std::make_unique<LtDescriptors>();
  JITGEMM_RETURN_IF_ERROR(MakeDescriptors(mapping, alignment, desc.get()));
  absl::StatusOr<cublasLtMatmulHeuristicResult_t> best =
      BestAlgo(handle, mapping, *desc, kMaxWorkspaceBytes, alignment, algorithm);
  if (!best.ok() && !absl::IsNotFound(best.status()) && mapping.epilogue != LtEpilogue::kDefault) {
    // No kernel for the fused epilogue: the plain product plus the pass.
    mapping = backends::WithoutLtEpilogue(mapping, problem);
    desc = std::make_unique<LtDescriptors>();
    JITGEMM_RETURN_IF_ERROR(MakeDescriptors(mapping, alignment, desc.get()));
    best = BestAlgo(handle, mapping, *desc, kMaxWorkspaceBytes, alignment, algorithm);
  }
  if (!best.ok()) return best.status();

  std::unique_ptr<ElementwiseEpilogue> pass;
  if (mapping.elementwise_after) {
    absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> made =
        elementwise ? elementwise(problem, options)
                    : UnimplementedElementwiseEpilogue(problem, options);
    if (!made.ok()) {
      return absl::Status(made.status().code(),
                          absl::StrCat(ElementwiseReason(problem, mapping),
                                       ", so an elementwise pass must follow the product: ",
                                       made.status().message()));
    }
    pass = *std::move(made);
  }

  absl::StatusOr<cublasLtMatmulHeuristicResult_t> no_workspace = *best;
  if (best->workspaceSize > 0) {
    no_workspace = BestAlgo(handle, mapping, *desc, 0, alignment);
  }
  void* workspace = nullptr;
  if (best->workspaceSize > 0) {
    const cudaError_t err = cudaMalloc(&workspace, best->workspaceSize);
    if (err == cudaErrorMemoryAllocation && no_workspace.ok()) {
      // Out of memory: the algorithm without workspace still serves the plan.
      cudaGetLastError();  // clears the (non-sticky) error
      workspace = nullptr;
      best = *no_workspace;
    } else {
      JITGEMM_RETURN_IF_ERROR(CudaStatus(err, "cudaMalloc(cuBLASLt workspace)"));
    }
  }
  auto backend = std::unique_ptr<CublasLtBackend>(
      new CublasLtBackend(handle, std::move(mapping), std::move(desc), *best,
                          std::move(no_workspace), workspace, std::move(pass)));
  if (algorithm > 0) backend->NameAlgorithm(algorithm);
  return std::unique_ptr<Backend>(std::move(backend));
}

absl::StatusOr<std::unique_ptr<Backend>> CreateCublasBackend(const GemmProblem& problem,
                                                             const Options& options) {
  return CreateCublasBackend(problem, options, UnimplementedElementwiseEpilogue);
}

}  // namespace jitgemm
