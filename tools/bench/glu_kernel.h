// The silu(gate) * up kernel of the MLP suite's cuBLAS baseline: what a
// SwiGLU MLP runs between its gate / up GEMMs and its down GEMM when the
// two products are separate (PyTorch's F.silu(g) * u, fused into one pass as
// torch.compile would). out[i] = silu(gate[i]) * up[i] over `count`
// contiguous elements, 16 bytes per access when all three pointers allow
// it (a scalar tail otherwise), f32 / f16 / bf16, fp32 math with the fast
// exponential. Compiled with NVRTC at run time, as activation_kernel.h.
//
// Thread safety: Launch may be called from many threads once created.
#ifndef JITGEMM_TOOLS_BENCH_GLU_KERNEL_H_
#define JITGEMM_TOOLS_BENCH_GLU_KERNEL_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jitgemm/problem.h"

namespace jitgemm::bench {

// The CUDA source (self-contained: no header, no toolkit).
const char* GluKernelSource();

// "bench_silu_mul_bf16" and so on.
std::string GluKernelName(DataType type);

// Compiles GluKernelSource for `arch`: a cubin for "sm_XY" / "sm_90a", PTX
// for "compute_XY". Internal with NVRTC's log on failure.
absl::StatusOr<std::vector<char>> CompileGluKernels(const std::string& arch);

class GluKernel {
 public:
  // Compiles for the current device.
  static absl::StatusOr<std::unique_ptr<GluKernel>> Create();
  ~GluKernel();

  // out[i] = silu(gate[i]) * up[i], i < count; `out` may be `gate` or `up`.
  absl::Status Launch(const void* gate, const void* up, void* out, int64_t count, DataType type,
                      cudaStream_t stream) const;

 private:
  static constexpr int kTypes = 3;  // f32, f16, bf16 (DataType's values)

  GluKernel() = default;
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t kernels_[kTypes] = {};
  int max_blocks_ = 1024;
};

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_GLU_KERNEL_H_
