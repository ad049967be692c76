// Device discovery and kernel launch through cuLaunchKernelEx, with the
// programmatic-dependent-launch attribute where the kernel asks for it.
//
// Thread safety: free functions; launching the same CUfunction from several
// threads is safe.
#ifndef JITGEMM_JIT_LAUNCHER_H_
#define JITGEMM_JIT_LAUNCHER_H_

#include <string>

#include "absl/status/statusor.h"
#include "jit/driver_api.h"
#include "jit/family.h"
#include "jit/kernel_config.h"

namespace jitgemm::jit {

// Host mirror of jitgemm::GemmArgs in kernels_src/common/args.cuh.
struct GemmArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* d = nullptr;
  const void* bias = nullptr;
  float alpha = 1.f;
  float beta = 0.f;
  int m = 0;
  int reserved = 0;
  void* workspace = nullptr;
};
static_assert(sizeof(GemmArgs) == 64, "must match the device-side GemmArgs");

// The device the calling thread works on: the current context's, else the
// primary context of device 0, which is then made current (as the CUDA
// runtime would).
struct DeviceContext {
  CUcontext context = nullptr;
  CUdevice device = 0;
  TargetInfo target;
  std::string arch;  // "sm_90a" on Hopper: arch-specific instructions allowed
  std::string name;
};
absl::StatusOr<DeviceContext> CurrentDevice(const DriverApi& api);

// "sm_90a" -> 90; InvalidArgument for anything else than sm_XY[a].
absl::StatusOr<int> ParseArch(const std::string& arch);
// Target facts for an offline compile of `arch` (no device present).
TargetInfo OfflineTarget(int sm);

// `maps` (REQUIRES: non-null exactly when shape.tensor_maps) is the kernel's
// second parameter, the 384-byte block of TMA descriptors.
absl::Status Launch(const DriverApi& api, CUfunction function, const LaunchShape& shape,
                    const GemmArgs& args, CUstream stream, const void* maps = nullptr);

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_LAUNCHER_H_
