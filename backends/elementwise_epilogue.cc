#include "backends/elementwise_epilogue.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/jit_backend.h"
#include "core/status_macros.h"
#include "jit/families/elementwise.h"
#include "jit/families/gate.h"
#include "jit/family.h"

namespace jitgemm {
namespace {

class JitElementwise final : public ElementwiseEpilogue {
 public:
  explicit JitElementwise(std::unique_ptr<JitBackend> kernel) : kernel_(std::move(kernel)) {}
  // The gate kernel reads the product as args.c; the in-place pass ignores it.
  absl::Status Run(const void* product, void* d, const void* bias, CUstream stream) const override {
    return kernel_->Run({nullptr, nullptr, product, d, bias}, stream);
  }
  std::string Describe() const override { return kernel_->Describe(); }

 private:
  std::unique_ptr<JitBackend> kernel_;
};

}  // namespace

std::optional<jit::KernelConfig> ElementwiseConfig(const GemmProblem& problem,
                                                   const jit::TargetInfo& target,
                                                   const Options& options) {
  const bool gated = problem.epilogue.gate != Gate::kNone;
  const jit::KernelFamily& family =
      jit::GetFamily(gated ? jit::Family::kGate : jit::Family::kElementwise);
  std::vector<jit::KernelConfig> configs = family.Candidates(problem, target, options.tuning);
  if (configs.empty()) return std::nullopt;
  jit::KernelConfig config = configs.front();
  // The family assumes 16-byte pointers; the caller may promise less.
  config.block_n = gated ? jit::GateWidth(problem, options.pointer_alignment)
                         : jit::ElementwiseWidth(problem, options.pointer_alignment);
  config.pdl = options.pdl && target.sm >= 90;
  return config;
}

absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> MakeJitElementwiseEpilogueOf(
    const GemmProblem& problem, const Options& options, const jit::KernelConfig& config) {
  JITGEMM_ASSIGN_OR_RETURN(const jit::DriverApi* api, jit::GetDriver());
  JITGEMM_ASSIGN_OR_RETURN(jit::DeviceContext device, jit::CurrentDevice(*api));
  bool compiled = false;
  JITGEMM_ASSIGN_OR_RETURN(std::unique_ptr<JitBackend> kernel,
                           JitBackend::Create(problem, config, options, device, &compiled));
  return std::unique_ptr<ElementwiseEpilogue>(new JitElementwise(std::move(kernel)));
}

absl::StatusOr<std::unique_ptr<ElementwiseEpilogue>> MakeJitElementwiseEpilogue(
    const GemmProblem& problem, const Options& options) {
  JITGEMM_ASSIGN_OR_RETURN(const jit::DriverApi* api, jit::GetDriver());
  JITGEMM_ASSIGN_OR_RETURN(jit::DeviceContext device, jit::CurrentDevice(*api));
  const std::optional<jit::KernelConfig> config =
      ElementwiseConfig(problem, device.target, options);
  if (!config) {
    return absl::UnimplementedError("no elementwise kernel for this problem's epilogue");
  }
  return MakeJitElementwiseEpilogueOf(problem, options, *config);
}

}  // namespace jitgemm
