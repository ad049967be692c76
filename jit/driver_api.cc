#include "jit/driver_api.h"

#include <dlfcn.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/cuda_status.h"

namespace jitgemm::jit {
namespace {

// cuGetProcAddress resolves the symbol version that matches the API version
// we compiled against, which plain dlsym on versioned names would not.
using GetProcAddressFn = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);

absl::StatusOr<DriverApi> Load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA driver: cannot open libcuda.so.1 (", err ? err : "unknown", ")"));
  }
  auto get_proc = reinterpret_cast<GetProcAddressFn>(dlsym(lib, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    return absl::FailedPreconditionError(
        "CUDA driver too old: cuGetProcAddress_v2 is missing (driver 12.0 or newer needed)");
  }
  DriverApi api{};
  absl::Status status;
  auto resolve = [&](const char* name, auto** fn) {
    if (!status.ok()) return;
    void* p = nullptr;
    CUdriverProcAddressQueryResult found;
    // Ask for the 12.0 ABI of every entry point: the signatures in the table are
    // the ones cuda.h declares, and some symbols changed shape in 13.0
    // (cuCtxGetDevice gained a context argument), which asking for
    // CUDA_VERSION would silently hand back.
    CUresult r = get_proc(name, &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    if (r != CUDA_SUCCESS || p == nullptr || found != CU_GET_PROC_ADDRESS_SUCCESS) {
      status = absl::FailedPreconditionError(
          absl::StrCat("CUDA driver lacks ", name, " (a driver for CUDA 12.0 or newer is needed)"));
      return;
    }
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(p);
  };
#define JITGEMM_RESOLVE(name) resolve(#name, &api.name)
  JITGEMM_RESOLVE(cuInit);
  JITGEMM_RESOLVE(cuDriverGetVersion);
  JITGEMM_RESOLVE(cuGetErrorString);
  JITGEMM_RESOLVE(cuGetErrorName);
  JITGEMM_RESOLVE(cuDeviceGet);
  JITGEMM_RESOLVE(cuDeviceGetCount);
  JITGEMM_RESOLVE(cuDeviceGetAttribute);
  JITGEMM_RESOLVE(cuDeviceGetName);
  JITGEMM_RESOLVE(cuCtxGetCurrent);
  JITGEMM_RESOLVE(cuCtxSetCurrent);
  JITGEMM_RESOLVE(cuCtxGetDevice);
  JITGEMM_RESOLVE(cuDevicePrimaryCtxRetain);
  JITGEMM_RESOLVE(cuLibraryLoadData);
  JITGEMM_RESOLVE(cuLibraryUnload);
  JITGEMM_RESOLVE(cuLibraryGetKernel);
  JITGEMM_RESOLVE(cuKernelGetFunction);
  JITGEMM_RESOLVE(cuKernelSetAttribute);
  JITGEMM_RESOLVE(cuFuncGetAttribute);
  JITGEMM_RESOLVE(cuLaunchKernelEx);
  JITGEMM_RESOLVE(cuStreamIsCapturing);
  JITGEMM_RESOLVE(cuMemAlloc);
  JITGEMM_RESOLVE(cuMemFree);
  JITGEMM_RESOLVE(cuMemsetD8);
  JITGEMM_RESOLVE(cuCtxSynchronize);
  JITGEMM_RESOLVE(cuStreamCreate);
  JITGEMM_RESOLVE(cuStreamDestroy);
  JITGEMM_RESOLVE(cuStreamSynchronize);
  JITGEMM_RESOLVE(cuMemsetD8Async);
  JITGEMM_RESOLVE(cuThreadExchangeStreamCaptureMode);
  JITGEMM_RESOLVE(cuTensorMapEncodeTiled);
#undef JITGEMM_RESOLVE
  if (!status.ok()) return status;
  CUresult r = api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* msg = "unknown error";
    api.cuGetErrorString(r, &msg);
    return absl::FailedPreconditionError(absl::StrCat("cuInit failed: ", msg));
  }
  int count = 0;
  if (api.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    return absl::FailedPreconditionError("the CUDA driver reports no device");
  }
  return api;
}

}  // namespace

absl::StatusOr<const DriverApi*> GetDriver() {
  // Leaked on purpose: kernels may be unloaded during static destruction.
  static const auto* const kDriver = new absl::StatusOr<DriverApi>(Load());
  if (!kDriver->ok()) return kDriver->status();
  return &kDriver->value();
}

RelaxedCaptureScope::RelaxedCaptureScope(const DriverApi& api)
    : api_(api), saved_(CU_STREAM_CAPTURE_MODE_RELAXED) {
  api_.cuThreadExchangeStreamCaptureMode(&saved_);
}

RelaxedCaptureScope::~RelaxedCaptureScope() { api_.cuThreadExchangeStreamCaptureMode(&saved_); }

bool DefaultStreamCapturing(const DriverApi& api) {
  // The per-thread stream first: asking the legacy stream while a blocking
  // stream captures fails with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, an API
  // error compute-sanitizer reports, and that answer itself says that work on
  // the legacy stream would now join a capture.
  for (CUstream s : {CU_STREAM_PER_THREAD, CU_STREAM_LEGACY}) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    const CUresult result = api.cuStreamIsCapturing(s, &status);
    if (result == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) return true;
    if (result == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE) return true;
  }
  return false;
}

absl::Status DriverStatus(const DriverApi& api, CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  const char* name = "?";
  const char* msg = "?";
  api.cuGetErrorName(result, &name);
  api.cuGetErrorString(result, &msg);
  return DriverResultStatus(result, what, name, msg);
}

}  // namespace jitgemm::jit
