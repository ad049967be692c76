#include "tools/bench/context.h"

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda_status.h"
#include "core/status_macros.h"

namespace jitgemm::bench {
namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;

// The kernel K::Create() made on the first call, or the error it gave then.
template <class K>
absl::StatusOr<const K*> CreateOnce(std::unique_ptr<K>& kernel, absl::Status& status, bool& tried) {
  if (!tried) {
    tried = true;
    absl::StatusOr<std::unique_ptr<K>> k = K::Create();
    if (k.ok()) {
      kernel = *std::move(k);
    } else {
      status = k.status();
    }
  }
  if (kernel == nullptr) return status;
  return kernel.get();
}

}  // namespace

absl::StatusOr<std::unique_ptr<BenchContext>> BenchContext::Create(int device) {
  std::unique_ptr<BenchContext> ctx(new BenchContext());
  BENCH_CUDA(cudaSetDevice(device));
  BENCH_CUDA(cudaStreamCreateWithFlags(&ctx->stream_, cudaStreamNonBlocking));
  const cublasStatus_t st = cublasLtCreate(&ctx->lt_);
  if (st != CUBLAS_STATUS_SUCCESS) {
    return CublasStatusToStatus(st, "cublasLtCreate", cublasLtGetStatusString(st));
  }
  JITGEMM_RETURN_IF_ERROR(ctx->workspace_.Allocate(kWorkspaceBytes));
  return ctx;
}

BenchContext::~BenchContext() {
  activations_.reset();
  glu_.reset();
  if (lt_ != nullptr) cublasLtDestroy(lt_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

absl::StatusOr<const ActivationKernel*> BenchContext::Activations() {
  return CreateOnce(activations_, activations_status_, activations_tried_);
}

absl::StatusOr<const GluKernel*> BenchContext::Glu() {
  return CreateOnce(glu_, glu_status_, glu_tried_);
}

}  // namespace jitgemm::bench
