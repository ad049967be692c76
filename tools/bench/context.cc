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
  if (!activations_tried_) {
    activations_tried_ = true;
    absl::StatusOr<std::unique_ptr<ActivationKernel>> k = ActivationKernel::Create();
    if (k.ok()) {
      activations_ = *std::move(k);
    } else {
      activations_status_ = k.status();
    }
  }
  if (activations_ == nullptr) return activations_status_;
  return activations_.get();
}

absl::StatusOr<const GluKernel*> BenchContext::Glu() {
  if (!glu_tried_) {
    glu_tried_ = true;
    absl::StatusOr<std::unique_ptr<GluKernel>> k = GluKernel::Create();
    if (k.ok()) {
      glu_ = *std::move(k);
    } else {
      glu_status_ = k.status();
    }
  }
  if (glu_ == nullptr) return glu_status_;
  return glu_.get();
}

}  // namespace jitgemm::bench
