#include "jit/launcher.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/status_macros.h"

namespace jitgemm::jit {

absl::StatusOr<DeviceContext> CurrentDevice(const DriverApi& api) {
  DeviceContext dc;
  JITGEMM_RETURN_IF_ERROR(DriverStatus(api, api.cuCtxGetCurrent(&dc.context), "cuCtxGetCurrent"));
  if (dc.context == nullptr) {
    JITGEMM_RETURN_IF_ERROR(DriverStatus(api, api.cuDeviceGet(&dc.device, 0), "cuDeviceGet"));
    JITGEMM_RETURN_IF_ERROR(DriverStatus(api, api.cuDevicePrimaryCtxRetain(&dc.context, dc.device),
                                         "cuDevicePrimaryCtxRetain"));
    JITGEMM_RETURN_IF_ERROR(DriverStatus(api, api.cuCtxSetCurrent(dc.context), "cuCtxSetCurrent"));
  } else {
    JITGEMM_RETURN_IF_ERROR(DriverStatus(api, api.cuCtxGetDevice(&dc.device), "cuCtxGetDevice"));
  }
  int major = 0, minor = 0, sms = 0, smem = 0;
  JITGEMM_RETURN_IF_ERROR(DriverStatus(
      api,
      api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dc.device),
      "cuDeviceGetAttribute"));
  api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dc.device);
  api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dc.device);
  api.cuDeviceGetAttribute(&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dc.device);
  char name[256] = {};
  api.cuDeviceGetName(name, sizeof(name), dc.device);
  dc.name = name;
  dc.target.sm = major * 10 + minor;
  dc.target.multiprocessors = sms;
  dc.target.shared_bytes_per_block_optin = smem;
  if (dc.target.sm < 70) {
    return absl::FailedPreconditionError(absl::StrCat("unsupported GPU ", dc.name, " (sm_",
                                                      dc.target.sm, "): sm_70 or newer needed"));
  }
  // Hopper kernels may use wgmma/setmaxnreg, which exist only in the sm_90a target.
  dc.arch = absl::StrCat("sm_", dc.target.sm, dc.target.sm == 90 ? "a" : "");
  return dc;
}

absl::StatusOr<int> ParseArch(const std::string& arch) {
  absl::string_view s = arch;
  int sm = 0;
  if (s.size() >= 5 && s.substr(0, 3) == "sm_") {
    absl::string_view digits = s.substr(3);
    if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) {
      digits.remove_suffix(1);
    }
    if (absl::SimpleAtoi(digits, &sm) && sm >= 70 && sm < 1000) return sm;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("arch: '", arch, "' is not a real GPU architecture like sm_80 or sm_90a"));
}

TargetInfo OfflineTarget(int sm) {
  TargetInfo t;
  t.sm = sm;
  // Heuristics scale with the SM count; offline, assume the flagship part of
  // each generation (H100 SXM: 132, A100: 108).
  t.multiprocessors = sm >= 90 ? 132 : 108;
  t.shared_bytes_per_block_optin = sm >= 90 ? 227 * 1024 : (sm == 80 ? 163 * 1024 : 99 * 1024);
  return t;
}

absl::Status Launch(const DriverApi& api, CUfunction function, const LaunchShape& shape,
                    const GemmArgs& args, CUstream stream, const void* maps) {
  CUlaunchConfig config{};
  config.gridDimX = shape.grid[0];
  config.gridDimY = shape.grid[1];
  config.gridDimZ = shape.grid[2];
  config.blockDimX = shape.block[0];
  config.blockDimY = shape.block[1];
  config.blockDimZ = shape.block[2];
  config.sharedMemBytes = shape.shared_bytes;
  config.hStream = stream;
  CUlaunchAttribute attrs[2];
  unsigned n = 0;
  if (shape.pdl) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[n].value.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (shape.cluster_x > 1 || shape.cluster_y > 1) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = shape.cluster_x;
    attrs[n].value.clusterDim.y = shape.cluster_y;
    attrs[n].value.clusterDim.z = 1;
    ++n;
  }
  if (n > 0) {
    config.attrs = attrs;
    config.numAttrs = n;
  }
  GemmArgs copy = args;
  void* params[] = {&copy, const_cast<void*>(maps)};
  return DriverStatus(api, api.cuLaunchKernelEx(&config, function, params, nullptr),
                      "cuLaunchKernelEx");
}

}  // namespace jitgemm::jit
