// The cuBLASLt setup the cuBLASLt backend needs before its first run: status
// mapping, the per-device handle, descriptors for a mapping, and the
// heuristic's algorithms. Internal to backends/.
//
// Thread safety: LtHandleForDevice is thread-safe; the rest are pure or act
// only on what they are given.
#ifndef JITGEMM_BACKENDS_CUBLAS_LT_SETUP_H_
#define JITGEMM_BACKENDS_CUBLAS_LT_SETUP_H_

#include <cublasLt.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cublas_mapping.h"

namespace jitgemm::backends {

// A cuBLAS status as a Status, mapped as core/cuda_status.h says, with
// cuBLASLt's text. `what` names the call.
absl::Status CublasStatus(cublasStatus_t status, const char* what);

// The device of the calling thread's current context, or FailedPrecondition
// when the process has no usable GPU.
absl::StatusOr<int> CurrentDevice();

// One cuBLASLt handle per device for the whole process, created on first use
// and never destroyed (plans may outlive static destruction order).
absl::StatusOr<cublasLtHandle_t> LtHandleForDevice(int device);

// True when the Lt epilogue reads a bias pointer.
bool HasLtBias(LtEpilogue epilogue);

// Sets one attribute of a matmul descriptor; `what` names it in errors.
template <typename T>
absl::Status SetDescAttr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                         const T& value, const char* what) {
  return CublasStatus(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)), what);
}

// The Lt descriptors of one mapping. Owns them.
struct LtDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;

  LtDescriptors() = default;
  LtDescriptors(const LtDescriptors&) = delete;
  LtDescriptors& operator=(const LtDescriptors&) = delete;
  ~LtDescriptors();
};

// Fills `out` for `mapping`; `pointer_alignment` is what Lt may assume of the bias.
absl::Status MakeDescriptors(const CublasLtMapping& mapping, int pointer_alignment,
                             LtDescriptors* out);

// The heuristic's `index`-th suggestion (0: its first choice) with at most
// `max_workspace` bytes of workspace. Unimplemented when Lt has none,
// NotFound when it offers fewer than index + 1.
absl::StatusOr<cublasLtMatmulHeuristicResult_t> BestAlgo(cublasLtHandle_t handle,
                                                         const CublasLtMapping& mapping,
                                                         const LtDescriptors& desc,
                                                         uint64_t max_workspace,
                                                         int pointer_alignment, int index = 0);

}  // namespace jitgemm::backends

#endif  // JITGEMM_BACKENDS_CUBLAS_LT_SETUP_H_
