// The separate activation kernel of the "addmm_act" baseline: what PyTorch
// runs for F.linear followed by F.relu / F.gelu / F.silu (cuBLASLt's BIAS
// epilogue, then one elementwise pass). An in-place pass over D that moves
// 16 bytes per thread and step (a scalar tail where the pointer or the count
// leaves one), for f16, bf16 and f32 and every activation of the library,
// with the formulas of kernels_src/common/epilogue.cuh's Activate so that the
// baseline computes what the fused epilogues compute. Compiled with NVRTC at
// run time (the build compiles no .cu file) and loaded with the runtime's
// library API.
//
// Thread safety: Launch may be called from many threads once created.
#ifndef JITGEMM_TOOLS_BENCH_ACTIVATION_KERNEL_H_
#define JITGEMM_TOOLS_BENCH_ACTIVATION_KERNEL_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jitgemm/problem.h"

namespace jitgemm::bench {

// The CUDA source of every kernel (self-contained: no header, no toolkit).
const char* ActivationKernelSource();

// The kernel for `type` and `act`, e.g. "bench_act_bf16_silu"; InvalidArgument
// for Activation::kNone.
absl::StatusOr<std::string> ActivationKernelName(DataType type, Activation act);

// Compiles ActivationKernelSource with NVRTC for `arch`: a cubin for "sm_XY"
// (or "sm_90a"), PTX for "compute_XY". Internal with NVRTC's log on failure.
absl::StatusOr<std::vector<char>> CompileActivationKernels(const std::string& arch);

class ActivationKernel {
 public:
  // Compiles for the current device.
  static absl::StatusOr<std::unique_ptr<ActivationKernel>> Create();
  ~ActivationKernel();

  // data[i] = act(data[i]) over `count` contiguous elements of `type`;
  // nothing for Activation::kNone.
  absl::Status Launch(void* data, int64_t count, DataType type, Activation act,
                      cudaStream_t stream) const;

 private:
  static constexpr int kTypes = 3;        // f32, f16, bf16 (DataType's values)
  static constexpr int kActivations = 5;  // Activation's values, kNone unused

  ActivationKernel() = default;
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t kernels_[kTypes][kActivations] = {};
  int max_blocks_ = 1024;
};

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_ACTIVATION_KERNEL_H_
