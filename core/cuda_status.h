// The one mapping from a CUDA error to an absl::Status, for the driver API's
// CUresult and the runtime API's cudaError_t alike, so a failure reads the
// same whichever layer met it:
//
//   out of memory                                   -> ResourceExhausted
//   invalid value or handle                         -> InvalidArgument
//   no device, no or old driver, no binary for the
//   GPU, unsupported PTX, bad context, not supported,
//   an operation stream capture forbids             -> FailedPrecondition
//   anything else                                   -> Internal
//
// The message is "<what> failed: <NAME> (<description>)".
//
// cuBLAS statuses follow the same table: allocation failure is
// ResourceExhausted, not initialised or wrong arch FailedPrecondition, not
// supported Unimplemented (cuBLASLt has no kernel for the request), the rest
// Internal (an invalid value there is the library's mistake: problems are
// validated before cuBLAS sees them).
//
// The header takes the codes as int so that it needs no CUDA header; the
// names and descriptions come from whichever API the caller uses
// (cuGetErrorName through the dlopen'ed driver table, or cudaGetErrorName;
// see core/cuda_runtime_status.h).
//
// Thread safety: pure functions.
#ifndef JITGEMM_CORE_CUDA_STATUS_H_
#define JITGEMM_CORE_CUDA_STATUS_H_

#include "absl/status/status.h"

namespace jitgemm {

// The code for a driver API result (CUresult) / a runtime API error
// (cudaError_t). Success maps to kOk.
absl::StatusCode DriverResultCode(int cu_result);
absl::StatusCode RuntimeErrorCode(int cuda_error);

// The status of a failed call. `name` and `description` may be null.
absl::Status DriverResultStatus(int cu_result, const char* what, const char* name,
                                const char* description);
absl::Status RuntimeErrorStatus(int cuda_error, const char* what, const char* name,
                                const char* description);

// The code for a cuBLAS / cuBLASLt status (cublasStatus_t), and the status of
// a failed call ("<what>: <description>", cublasLtGetStatusString's text).
absl::StatusCode CublasStatusCode(int cublas_status);
absl::Status CublasStatusToStatus(int cublas_status, const char* what, const char* description);

}  // namespace jitgemm

#endif  // JITGEMM_CORE_CUDA_STATUS_H_
