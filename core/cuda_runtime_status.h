// The CUDA runtime API's side of core/cuda_status.h: a cudaError_t as a
// Status with the runtime's own error name and text. Inline so that only the
// code that calls the runtime links it (jit/ uses the driver API alone).
//
// Thread safety: thread-safe, as the runtime's cudaGetErrorName is.
#ifndef JITGEMM_CORE_CUDA_RUNTIME_STATUS_H_
#define JITGEMM_CORE_CUDA_RUNTIME_STATUS_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "core/cuda_status.h"

namespace jitgemm {

// `what` names the call, e.g. "cudaMalloc(workspace)".
inline absl::Status CudaRuntimeStatus(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return absl::OkStatus();
  return RuntimeErrorStatus(error, what, cudaGetErrorName(error), cudaGetErrorString(error));
}

}  // namespace jitgemm

#endif  // JITGEMM_CORE_CUDA_RUNTIME_STATUS_H_
