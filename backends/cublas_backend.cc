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
#include "jit/families/gate.h"

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

// Device memory the backend owns. Errors of cudaFree are ignored: at process
// exit the runtime may already be gone.
struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DeviceMemory = std::unique_ptr<void, CudaFree>;

class CublasLtBackend final : public Backend {
 public:
  // `product`: the [gate | up] workspace of a gated problem (`product_bytes`
  // long), which Lt writes instead of D; null otherwise.
  CublasLtBackend(cublasLtHandle_t handle, CublasLtMapping mapping,
                  std::unique_ptr<LtDescriptors> desc, cublasLtMatmulHeuristicResult_t best,
                  absl::StatusOr<cublasLtMatmulHeuristicResult_t> no_workspace,
                  DeviceMemory workspace, DeviceMemory product, int64_t product_bytes,
                  std::unique_ptr<ElementwiseEpilogue> elementwise)
      : handle_(handle),
        mapping_(std::move(mapping)),
        desc_(std::move(desc)),
        best_(best),
        no_workspace_(std::move(no_workspace)),
        workspace_(std::move(workspace)),
        product_(std::move(product)),
        elementwise_(std::move(elementwise)) {
    describe_ = absl::StrFormat("cublasLt %s (%s, workspace %d B)",
                                backends::LtEpilogueName(mapping_.epilogue), DebugString(mapping_),
                                best_.workspaceSize);
    if (product_ != nullptr) {
      absl::StrAppend(&describe_, ", gated: [gate | up] into ", product_bytes, " B");
    }
    if (elementwise_ != nullptr) absl::StrAppend(&describe_, " + ", elementwise_->Describe());
  }

  absl::Status Run(const GemmPointers& p, CUstream stream) const override {
    const void* lt_a = mapping_.swapped ? p.b : p.a;
    const void* lt_b = mapping_.swapped ? p.a : p.b;
    // A gated problem's product goes to the workspace the gate pass reads.
    void* lt_d = product_ != nullptr ? product_.get() : p.d;
    const void* c = mapping_.beta != 0.0f ? p.c : lt_d;
    // Always the best algorithm with the plan's workspace: a plan's runs are
    // ordered (plan.h), so no two runs share the scratch memory at once. An
    // earlier rule gave the workspace to the first stream that ran the plan,
    // which was the tuner's private stream, leaving every user run on the
    // slower workspace-free algorithm (5% at 4096^3 fp16 on the H100).
    const cublasLtMatmulAlgo_t* algo = &best_.algo;
    void* workspace = workspace_.get();
    size_t workspace_bytes = best_.workspaceSize;
    absl::Status status;
    if (HasLtBias(mapping_.epilogue)) {
      // The bias pointer lives in the shared descriptor: set it and launch
      // under one lock so concurrent runs never see each other's pointer.
      absl::MutexLock lock(&bias_mu_);
      status = SetDescAttr(desc_->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, p.bias, "BIAS_POINTER");
      if (status.ok())
        status = Matmul(lt_a, lt_b, c, lt_d, algo, workspace, workspace_bytes, stream);
    } else {
      status = Matmul(lt_a, lt_b, c, lt_d, algo, workspace, workspace_bytes, stream);
    }
    if (!status.ok()) return status;
    if (elementwise_ != nullptr) return elementwise_->Run(lt_d, p.d, p.bias, stream);
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
  DeviceMemory workspace_;
  DeviceMemory product_;
  std::unique_ptr<ElementwiseEpilogue> elementwise_;
  std::string describe_;
  mutable absl::Mutex bias_mu_;
};

std::string ElementwiseReason(const GemmProblem& p, const CublasLtMapping& m) {
  if (p.epilogue.gate != Gate::kNone) {
    return "cuBLASLt has no gated epilogue (act(gate) * up), so a gate pass";
  }
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
  if (problem.epilogue.gate != Gate::kNone) {
    return absl::UnimplementedError(
        absl::StrFormat("the gate pass after a cuBLAS [gate | up] product (%s) is not available",
                        ActivationName(problem.epilogue.activation)));
  }
  return absl::UnimplementedError(absl::StrFormat(
      "the elementwise pass after a cuBLAS product (bias %s, %s) is not available yet",
      problem.epilogue.bias == BiasMode::kNone
          ? "none"
          : (problem.epilogue.bias == BiasMode::kPerRow ? "per-row" : "per-column"),
      ActivationName(problem.epilogue.activation)));
}

absl::StatusOr<std::unique_ptr<Backend>> CreateCublasBackend(
    const GemmProblem& problem, const Options& options,
    const ElementwiseEpilogueFactory& elementwise, int algorithm, bool activation_in_pass) {
  JITGEMM_ASSIGN_OR_RETURN(const int device, CurrentDevice());
  const bool gated = problem.epilogue.gate == Gate::kHalves;
  // A gated problem's Lt call is its inner product of 2N columns, into the
  // [gate | up] workspace; the gate pass then writes D.
  const GemmProblem lt_problem = gated ? backends::GatedProductProblem(problem) : problem;
  JITGEMM_ASSIGN_OR_RETURN(CublasLtMapping mapping,
                           backends::MapToCublasLt(lt_problem, options.allow_tf32));
  if (activation_in_pass) {
    if (!backends::LtActivates(mapping)) {
      return absl::NotFoundError("cuBLASLt's epilogue has no activation to leave to the pass");
    }
    mapping = backends::WithActivationInPass(mapping);
  }
  JITGEMM_ASSIGN_OR_RETURN(cublasLtHandle_t handle, LtHandleForDevice(device));
  const int alignment = options.pointer_alignment;

  auto desc = std::make_unique<LtDescriptors>();
  JITGEMM_RETURN_IF_ERROR(MakeDescriptors(mapping, alignment, desc.get()));
  absl::StatusOr<cublasLtMatmulHeuristicResult_t> best =
      BestAlgo(handle, mapping, *desc, kMaxWorkspaceBytes, alignment, algorithm);
  if (!best.ok() && !absl::IsNotFound(best.status()) && mapping.epilogue != LtEpilogue::kDefault) {
    // No kernel for the fused epilogue: the plain product plus the pass.
    mapping = backends::WithoutLtEpilogue(mapping, lt_problem);
    desc = std::make_unique<LtDescriptors>();
    JITGEMM_RETURN_IF_ERROR(MakeDescriptors(mapping, alignment, desc.get()));
    best = BestAlgo(handle, mapping, *desc, kMaxWorkspaceBytes, alignment, algorithm);
  }
  if (!best.ok()) return best.status();

  std::unique_ptr<ElementwiseEpilogue> pass;
  if (gated || mapping.elementwise_after) {
    const GemmProblem pass_problem = gated ? backends::GatePassProblem(problem, mapping)
                                           : backends::ElementwiseProblem(problem, mapping);
    absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> made =
        elementwise ? elementwise(pass_problem, options)
                    : UnimplementedElementwiseEpilogue(pass_problem, options);
    if (!made.ok()) {
      return absl::Status(made.status().code(),
                          absl::StrCat(ElementwiseReason(problem, mapping),
                                       gated ? " must follow the product: "
                                             : ", so an elementwise pass must follow the product: ",
                                       made.status().message()));
    }
    pass = *std::move(made);
  }

  absl::StatusOr<cublasLtMatmulHeuristicResult_t> no_workspace = *best;
  if (best->workspaceSize > 0) {
    no_workspace = BestAlgo(handle, mapping, *desc, 0, alignment);
  }
  DeviceMemory workspace;
  if (best->workspaceSize > 0) {
    void* raw = nullptr;
    const cudaError_t err = cudaMalloc(&raw, best->workspaceSize);
    if (err == cudaErrorMemoryAllocation && no_workspace.ok()) {
      // Out of memory: the algorithm without workspace still serves the plan.
      cudaGetLastError();  // clears the (non-sticky) error
      best = *no_workspace;
    } else {
      JITGEMM_RETURN_IF_ERROR(CudaStatus(err, "cudaMalloc(cuBLASLt workspace)"));
      workspace.reset(raw);
    }
  }
  DeviceMemory product;
  int64_t product_bytes = 0;
  if (gated) {
    // Allocated once here so that Run stays allocation-free and capturable.
    product_bytes = jit::GateProductElements(problem) * DataTypeSize(problem.d.type);
    void* raw = nullptr;
    const cudaError_t err = cudaMalloc(&raw, static_cast<size_t>(product_bytes));
    if (err != cudaSuccess) {
      cudaGetLastError();  // an allocation failure is not sticky: leave no error behind
      return CudaStatus(err, "cudaMalloc(the [gate | up] workspace of a gated problem)");
    }
    product.reset(raw);
  }
  auto backend = std::unique_ptr<CublasLtBackend>(new CublasLtBackend(
      handle, std::move(mapping), std::move(desc), *best, std::move(no_workspace),
      std::move(workspace), std::move(product), product_bytes, std::move(pass)));
  if (algorithm > 0) backend->NameAlgorithm(algorithm);
  return std::unique_ptr<Backend>(std::move(backend));
}

absl::StatusOr<std::unique_ptr<Backend>> CreateCublasBackend(const GemmProblem& problem,
                                                             const Options& options) {
  return CreateCublasBackend(problem, options, UnimplementedElementwiseEpilogue);
}

}  // namespace jitgemm
