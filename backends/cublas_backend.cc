#include "backends/cublas_backend.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cublas_lt_setup.h"
#include "backends/cublas_mapping.h"
#include "core/cuda_runtime_status.h"
#include "core/status_macros.h"

namespace jitgemm {
namespace {

using backends::BestAlgo;
using backends::CublasLtMapping;
using backends::CublasStatus;
using backends::CurrentDevice;
using backends::HasLtBias;
using backends::LtCompute;
using backends::LtDescriptors;
using backends::LtEpilogue;
using backends::LtHandleForDevice;
using backends::LtMatrix;
using backends::MakeDescriptors;
using backends::SetDescAttr;

// The most workspace the heuristic may ask for; the backend allocates only
// what the chosen algorithm needs.
constexpr uint64_t kMaxWorkspaceBytes = 32ull << 20;

absl::Status CudaStatus(cudaError_t err, const char* what) { return CudaRuntimeStatus(err, what); }

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
        elementwise ? elementwise(backends::ElementwiseProblem(problem, mapping), options)
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
