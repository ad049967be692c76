// The GPU state jitgemm-bench keeps for the whole run: its stream, its own
// cuBLASLt handle and 32 MiB workspace (what PyTorch gives cuBLASLt on
// Hopper), and the activation and silu*mul kernels of the addmm_act baseline,
// each compiled on first use.
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
#include "tools/bench/glu_kernel.h"

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
  absl::StatusOr<const GluKernel*> Glu();

 private:
  BenchContext() = default;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer workspace_;
  std::unique_ptr<ActivationKernel> activations_;
  absl::Status activations_status_;
  bool activations_tried_ = false;
  std::unique_ptr<GluKernel> glu_;
  absl::Status glu_status_;
  bool glu_tried_ = false;
};

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_CONTEXT_H_
