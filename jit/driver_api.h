// The CUDA driver API, opened with dlopen into one function table.
//
// The library links no libcuda: a process without a GPU driver (CI, a build
// machine warming a cache) loads jitgemm and only gets FailedPrecondition when
// it asks for something that needs the driver.
//
// Thread safety: Get() initialises once (thread-safe); the table is immutable.
#ifndef JITGEMM_JIT_DRIVER_API_H_
#define JITGEMM_JIT_DRIVER_API_H_

#include <cuda.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace jitgemm::jit {

struct DriverApi {
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuCtxGetCurrent)(CUcontext*);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetDevice)(CUdevice*);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuLibraryLoadData)(CUlibrary*, const void*, CUjit_option*, void**, unsigned int,
                                CUlibraryOption*, void**, unsigned int);
  CUresult (*cuLibraryUnload)(CUlibrary);
  CUresult (*cuLibraryGetKernel)(CUkernel*, CUlibrary, const char*);
  CUresult (*cuKernelGetFunction)(CUfunction*, CUkernel);
  CUresult (*cuKernelSetAttribute)(CUfunction_attribute, int, CUkernel, CUdevice);
  CUresult (*cuFuncGetAttribute)(int*, CUfunction_attribute, CUfunction);
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuStreamCreate)(CUstream*, unsigned int);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuThreadExchangeStreamCaptureMode)(CUstreamCaptureMode*);
  CUresult (*cuTensorMapEncodeTiled)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                     const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                     const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                     CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
};

// While alive, the calling thread's stream-capture mode is relaxed, so the
// slow work of Plan::Create (allocations, compiles, timing on private
// streams) can never invalidate a capture the caller has in progress.
class RelaxedCaptureScope {
 public:
  explicit RelaxedCaptureScope(const DriverApi& api);
  ~RelaxedCaptureScope();
  RelaxedCaptureScope(const RelaxedCaptureScope&) = delete;
  RelaxedCaptureScope& operator=(const RelaxedCaptureScope&) = delete;

 private:
  const DriverApi& api_;
  CUstreamCaptureMode saved_;
};

// True when the legacy or per-thread default stream is capturing (the
// streams a plan created now could be asked to run on without the caller
// naming one), or a blocking stream is, which the legacy stream would join.
bool DefaultStreamCapturing(const DriverApi& api);

// The table, or FailedPrecondition naming why the driver is unusable (no
// libcuda.so.1, a symbol missing, cuInit failing, no device).
absl::StatusOr<const DriverApi*> GetDriver();

// Turns a CUresult into a Status; `what` names the call.
absl::Status DriverStatus(const DriverApi& api, CUresult result, const char* what);

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_DRIVER_API_H_
