// Shared setup of the GPU tests: they skip, saying why, where no GPU exists,
// and move data through device buffers with host mirrors.
//
// Thread safety: Buffer is thread-compatible.
#ifndef JITGEMM_SUPPORT_GPU_ENV_H_
#define JITGEMM_SUPPORT_GPU_ENV_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/host_types.h"
#include "gtest/gtest.h"
#include "jitgemm/problem.h"

namespace jitgemm::support {

// Empty when a device is usable, otherwise why not.
inline std::string NoGpuReason() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(e);
  if (count == 0) return "no CUDA device: the driver reports none";
  return "";
}

#define JITGEMM_REQUIRE_GPU()                                     \
  do {                                                            \
    const std::string reason = ::jitgemm::support::NoGpuReason(); \
    if (!reason.empty()) GTEST_SKIP() << reason;                  \
  } while (0)

#define CUDA_OK(expr)                                                      \
  do {                                                                     \
    cudaError_t e_ = (expr);                                               \
    ASSERT_EQ(e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(e_); \
  } while (0)

// A device buffer with a host mirror.
struct Buffer {
  std::vector<uint8_t> host;
  void* device_base = nullptr;
  void* device = nullptr;  // device_base + offset
  size_t bytes = 0;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (device_base != nullptr) cudaFree(device_base);
  }
  // Allocates `bytes` at byte `offset` past a 256-byte aligned base.
  cudaError_t Allocate(size_t n, size_t offset) {
    bytes = n;
    host.assign(n, 0);
    cudaError_t e = cudaMalloc(&device_base, n + offset + 16);
    device = static_cast<uint8_t*>(device_base) + offset;
    return e;
  }
  void FillRandom(DataType type, std::mt19937_64& rng) {
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    const int64_t count = bytes / DataTypeSize(type);
    for (int64_t i = 0; i < count; ++i) StoreAs(type, host.data(), i, dist(rng));
  }
  cudaError_t Upload() { return cudaMemcpy(device, host.data(), bytes, cudaMemcpyHostToDevice); }
  cudaError_t Download() { return cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost); }
  // 0xff bytes are NaN in f32, f16 and bf16: an element a kernel fails to write stays NaN.
  cudaError_t Poison() {
    std::memset(host.data(), 0xff, bytes);
    return cudaMemset(device, 0xff, bytes);
  }
};

}  // namespace jitgemm::support

#endif  // JITGEMM_SUPPORT_GPU_ENV_H_
