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
  relu_.reset();
  if (lt_ != nullptr) cublasLtDestroy(lt_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

absl::StatusOr<const ReluKernel*> BenchContext::Relu() {
  if (!relu_tried_) {
    relu_tried_ = true;
    absl::StatusOr<std::unique_ptr<ReluKernel>> k = ReluKernel::Create();
    if (k.ok()) {
      relu_ = *std::move(k);
    } else {
      relu_status_ = k.status();
    }
  }
  if (relu_ == nullptr) return relu_status_;
  return relu_.get();
}

}  // namespace jitgemm::bench
