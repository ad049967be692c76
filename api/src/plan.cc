#include "jitgemm/plan.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/src/backend.h"
#include "api/src/jit_backend.h"
#include "api/src/log.h"
#include "api/src/problem_internal.h"
#include "common/status_macros.h"
#include "jit/candidates.h"
#include "jit/driver_api.h"
#include "jit/launcher.h"
#include "tune/cublas_backend.h"

namespace jitgemm {

class Plan::Impl {
 public:
  GemmProblem problem;
  PlanInfo info;
  int pointer_alignment = 16;
  std::unique_ptr<Backend> backend;
};

namespace {

absl::Status ValidateOptions(const Options& o) {
  const int a = o.pointer_alignment;
  if (a != 1 && a != 2 && a != 4 && a != 8 && a != 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.pointer_alignment: must be 1, 2, 4, 8 or 16, got ", a));
  }
  if (!(o.win_margin >= 0.0 && o.win_margin < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.win_margin: must be in [0, 1), got ", o.win_margin));
  }
  if (!o.arch.empty()) {
    auto sm = jit::ParseArch(o.arch);
    if (!sm.ok()) return absl::InvalidArgumentError(absl::StrCat("options.", sm.status().message()));
  }
  return absl::OkStatus();
}

absl::Status UseCublas(const GemmProblem& p, const Options& options, const std::string& reason,
                       Plan::Impl* impl) {
  JITGEMM_ASSIGN_OR_RETURN(impl->backend, CreateCublasBackend(p, options));
  impl->info.backend = "cublas";
  impl->info.kernel_name = impl->backend->Describe();
  impl->info.reason = reason;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Plan> Plan::Create(const GemmProblem& problem, const Options& options) {
  JITGEMM_RETURN_IF_ERROR(ValidateProblem(problem));
  JITGEMM_RETURN_IF_ERROR(ValidateOptions(options));
  auto impl = std::make_shared<Impl>();
  impl->problem = Canonicalize(problem);
  impl->pointer_alignment = options.pointer_alignment;
  const GemmProblem& p = impl->problem;

  if (options.backend == BackendPolicy::kCublasOnly) {
    JITGEMM_RETURN_IF_ERROR(UseCublas(p, options, "backend policy is cublas", impl.get()));
    return Plan(std::move(impl));
  }

  JITGEMM_ASSIGN_OR_RETURN(const jit::DriverApi* api, jit::GetDriver());
  JITGEMM_ASSIGN_OR_RETURN(jit::DeviceContext device, jit::CurrentDevice(*api));
  if (!options.arch.empty() && options.arch != device.arch) {
    return absl::InvalidArgumentError(absl::StrCat("options.arch: ", options.arch,
                                                   " does not match the current device (",
                                                   device.arch, ")"));
  }
  const auto configs = jit::ProposeConfigs(p, device.target, options);
  absl::Status last = absl::UnimplementedError("no JIT kernel family supports this problem");
  for (const jit::KernelConfig& config : configs) {
    bool compiled = false;
    auto backend = JitBackend::Create(p, config, options, device, &compiled);
    if (backend.ok()) {
      impl->info.backend = "jit";
      impl->info.kernel_name = (*backend)->binary().kernel_name;
      impl->info.compiled = compiled;
      impl->info.reason = absl::StrCat("heuristic choice ", config.ToString(),
                                       compiled ? " (compiled)" : " (cached)");
      impl->backend = std::move(*backend);
      LogDecision(p, impl->info);
      return Plan(std::move(impl));
    }
    last = backend.status();
    // Not cached with compiling off: try the next config, then cuBLAS.
    if (!absl::IsNotFound(last)) break;
  }
  if (options.backend == BackendPolicy::kJitOnly) return last;
  JITGEMM_RETURN_IF_ERROR(
      UseCublas(p, options, absl::StrCat("no JIT kernel: ", last.message()), impl.get()));
  LogDecision(p, impl->info);
  return Plan(std::move(impl));
}

absl::Status Plan::Run(const GemmPointers& pointers, CUstream stream) const {
  if (impl_ == nullptr) return absl::FailedPreconditionError("Run on a moved-from Plan");
  JITGEMM_RETURN_IF_ERROR(CheckPointers(impl_->problem, pointers, impl_->pointer_alignment));
  return impl_->backend->Run(pointers, stream);
}

const GemmProblem& Plan::problem() const { return impl_->problem; }
const PlanInfo& Plan::info() const { return impl_->info; }

Plan::Plan(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Plan::~Plan() = default;

}  // namespace jitgemm
