// The separate ReLU kernel of the "addmm + relu" baseline (what nn.Linear
// followed by nn.ReLU runs): an in-place, vectorised elementwise pass,
// compiled with NVRTC at run time (the build compiles no .cu file) and
// loaded with the runtime's library API.
//
// Thread safety: Launch may be called from many threads once created.
#ifndef JITGEMM_TOOLS_BENCH_RELU_KERNEL_H_
#define JITGEMM_TOOLS_BENCH_RELU_KERNEL_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace jitgemm::bench {

class ReluKernel {
 public:
  // Compiles for the current device.
  static absl::StatusOr<std::unique_ptr<ReluKernel>> Create();
  ~ReluKernel();

  // x = max(x, 0) over `count` contiguous elements of `element_bytes` (2 or 4).
  absl::Status Launch(void* data, int64_t count, int element_bytes, cudaStream_t stream) const;

 private:
  ReluKernel() = default;
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t relu16_ = nullptr;
  cudaKernel_t relu32_ = nullptr;
  int max_blocks_ = 1024;
};

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_RELU_KERNEL_H_
