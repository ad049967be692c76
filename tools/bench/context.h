// The GPU state jitgemm-bench keeps for the whole run: its stream, its own
// cuBLASLt handle and 32 MiB workspace (what PyTorch gives cuBLASLt on
// Hopper), and the activation kernel of the addmm_act baseline, compiled on first use.
//
// Thread safety: one thread.
#ifndef JITGEMM_TOOLS_BENCH_CONTEXT_H_
#define JITGEMM_TOOLS_BENCH_CONTEXT_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/bench/activation_kernel.h"
#include "tools/bench/cuda_util.h"

namespace jitgemm::bench {

class BenchContext {
 public:
  static absl::StatusOr<std::unique_ptr<BenchContext>> Create(int device);
  ~BenchContext();

  cudaStream_t stream() const { return stream_; }
  cublasLtHandle_t lt() const { return lt_; }
  void* workspace() const { return workspace_.get(); }
  size_t workspace_bytes() const { return workspace_.bytes(); }
  absl::StatusOr<const ActivationKernel*> Activations();

 private:
  BenchContext() = default;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer workspace_;
  std::unique_ptr<ActivationKernel> activations_;
  absl::Status activations_status_;
  bool activations_tried_ = false;
};

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_CONTEXT_H_
