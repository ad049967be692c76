// Small CUDA runtime helpers for jitgemm-bench: status conversion and an
// owning device buffer.
#ifndef JITGEMM_TOOLS_BENCH_CUDA_UTIL_H_
#define JITGEMM_TOOLS_BENCH_CUDA_UTIL_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "absl/status/status.h"
#include "core/cuda_runtime_status.h"

namespace jitgemm::bench {

inline absl::Status CudaCheck(cudaError_t err, const char* what) {
  return CudaRuntimeStatus(err, what);
}

// True for errors after which the CUDA context is unusable (a kernel fault).
inline bool IsStickyError(cudaError_t err) {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

#define BENCH_CUDA(expr)                                                       \
  do {                                                                         \
    ::absl::Status bench_status_ = ::jitgemm::bench::CudaCheck((expr), #expr); \
    if (!bench_status_.ok()) return bench_status_;                             \
  } while (0)

// Owns one cudaMalloc allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = o.bytes_;
    }
    return *this;
  }
  ~DeviceBuffer() { Reset(); }

  absl::Status Allocate(size_t bytes) {
    Reset();
    bytes_ = bytes;
    return CudaCheck(cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes), "cudaMalloc");
  }
  void Reset() {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_CUDA_UTIL_H_
