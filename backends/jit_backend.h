// A plan served by one specialised JIT kernel.
#ifndef JITGEMM_BACKENDS_JIT_BACKEND_H_
#define JITGEMM_BACKENDS_JIT_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "jit/kernel_config.h"
#include "jit/kernel_store.h"
#include "jit/launcher.h"
#include "jit/tensor_maps.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm {

class JitBackend final : public Backend {
 public:
  // Specialises, gets (cache or compile) and loads the kernel for the device
  // current on this thread; allocates and zeroes the kernel's workspace.
  // REQUIRES: `problem` is valid and canonical and the config supports it.
  static absl::StatusOr<std::unique_ptr<JitBackend>> Create(const GemmProblem& problem,
                                                            const jit::KernelConfig& config,
                                                            const Options& options,
                                                            const jit::DeviceContext& device,
                                                            bool* compiled);
  ~JitBackend() override;

  absl::Status Run(const GemmPointers& pointers, CUstream stream) const override;
  std::string Describe() const override;
  const jit::KernelBinary& binary() const { return *kernel_->binary; }

 private:
  JitBackend() = default;
  const jit::DriverApi* api_ = nullptr;
  std::shared_ptr<const jit::LoadedKernel> kernel_;
  CUfunction function_ = nullptr;
  jit::LaunchShape shape_;
  jit::GemmArgs args_;  // everything but the pointers
  // What the TMA descriptors of sm90 kernels are encoded from at each run.
  GemmProblem problem_;
  jit::KernelConfig config_;
  CUdeviceptr workspace_ = 0;
};

}  // namespace jitgemm

#endif  // JITGEMM_BACKENDS_JIT_BACKEND_H_
