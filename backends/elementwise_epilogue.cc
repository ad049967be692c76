#include "backends/elementwise_epilogue.h"

#include <memory>
#include <string>
#include <utility>

#include "backends/jit_backend.h"
#include "core/status_macros.h"
#include "jit/family.h"

namespace jitgemm {
namespace {

class JitElementwise final : public ElementwiseEpilogue {
 public:
  explicit JitElementwise(std::unique_ptr<JitBackend> kernel) : kernel_(std::move(kernel)) {}
  absl::Status Run(void* d, const void* bias, CUstream stream) const override {
    return kernel_->Run({nullptr, nullptr, nullptr, d, bias}, stream);
  }
  std::string Describe() const override { return kernel_->Describe(); }

 private:
  std::unique_ptr<JitBackend> kernel_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> MakeJitElementwiseEpilogue(
    const GemmProblem& problem, const Options& options) {
  JITGEMM_ASSIGN_OR_RETURN(const jit::DriverApi* api, jit::GetDriver());
  JITGEMM_ASSIGN_OR_RETURN(jit::DeviceContext device, jit::CurrentDevice(*api));
  const jit::KernelFamily& family = jit::GetFamily(jit::Family::kElementwise);
  jit::KernelConfig config = family.Candidates(problem, device.target, options.tuning).front();
  config.pdl = options.pdl && device.target.sm >= 90;
  bool compiled = false;
  JITGEMM_ASSIGN_OR_RETURN(std::unique_ptr<JitBackend> kernel,
                           JitBackend::Create(problem, config, options, device, &compiled));
  return std::unique_ptr<ElementwiseEpilogue>(new JitElementwise(std::move(kernel)));
}

}  // namespace jitgemm
