// The one CUDA-error mapping (core/cuda_status.h): both APIs give the same
// code for the same failure, so callers see one vocabulary whichever layer
// met the error.
#include "core/cuda_status.h"

#include <cublas_api.h>
#include <cuda.h>
#include <driver_types.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace jitgemm {
namespace {

using ::jitgemm::support::IsOk;
using ::jitgemm::support::StatusIs;
using ::testing::HasSubstr;

TEST(CudaStatusTest, OutOfMemoryIsResourceExhaustedFromBothApis) {
  EXPECT_EQ(DriverResultCode(CUDA_ERROR_OUT_OF_MEMORY), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(RuntimeErrorCode(cudaErrorMemoryAllocation), absl::StatusCode::kResourceExhausted);
}

TEST(CudaStatusTest, MissingDeviceOrDriverIsFailedPrecondition) {
  for (CUresult r :
       {CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
        CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED}) {
    EXPECT_EQ(DriverResultCode(r), absl::StatusCode::kFailedPrecondition) << r;
  }
  for (cudaError_t e : {cudaErrorNoDevice, cudaErrorInsufficientDriver, cudaErrorInvalidDevice,
                        cudaErrorNoKernelImageForDevice, cudaErrorStreamCaptureInvalidated}) {
    EXPECT_EQ(RuntimeErrorCode(e), absl::StatusCode::kFailedPrecondition) << e;
  }
}

TEST(CudaStatusTest, InvalidValueIsInvalidArgumentAndTheRestInternal) {
  EXPECT_EQ(DriverResultCode(CUDA_ERROR_INVALID_VALUE), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RuntimeErrorCode(cudaErrorInvalidValue), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DriverResultCode(CUDA_ERROR_ILLEGAL_ADDRESS), absl::StatusCode::kInternal);
  EXPECT_EQ(RuntimeErrorCode(cudaErrorIllegalAddress), absl::StatusCode::kInternal);
}

TEST(CudaStatusTest, SuccessIsOk) {
  EXPECT_EQ(DriverResultCode(CUDA_SUCCESS), absl::StatusCode::kOk);
  EXPECT_THAT(RuntimeErrorStatus(cudaSuccess, "cudaMalloc", nullptr, nullptr), IsOk());
}

TEST(CudaStatusTest, MessageNamesTheCallAndTheError) {
  EXPECT_THAT(DriverResultStatus(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc(workspace)",
                                 "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("cuMemAlloc(workspace) failed: CUDA_ERROR_OUT_OF_MEMORY "
                                 "(out of memory)")));
  EXPECT_THAT(RuntimeErrorStatus(cudaErrorLaunchFailure, "cudaStreamSynchronize", nullptr, nullptr),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("cudaStreamSynchronize failed: ?")));
}

TEST(CudaStatusTest, CublasFollowsTheSameTable) {
  EXPECT_EQ(CublasStatusCode(CUBLAS_STATUS_ALLOC_FAILED), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CublasStatusCode(CUBLAS_STATUS_ARCH_MISMATCH), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CublasStatusCode(CUBLAS_STATUS_NOT_SUPPORTED), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(CublasStatusCode(CUBLAS_STATUS_EXECUTION_FAILED), absl::StatusCode::kInternal);
  EXPECT_THAT(CublasStatusToStatus(CUBLAS_STATUS_SUCCESS, "x", nullptr), IsOk());
  EXPECT_THAT(
      CublasStatusToStatus(CUBLAS_STATUS_ALLOC_FAILED, "cublasLtCreate", "out of memory"),
      StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("cublasLtCreate: out of memory")));
}

}  // namespace
}  // namespace jitgemm
