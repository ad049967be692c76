#include "jitgemm/plan.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/src/log.h"
#include "api/src/options_check.h"
#include "api/src/pointer_check.h"
#include "api/src/record.h"
#include "backends/backend.h"
#include "backends/cublas_backend.h"
#include "backends/elementwise_epilogue.h"
#include "backends/jit_backend.h"
#include "cache/disk_cache.h"
#include "cache/tuning_record.h"
#include "core/planned_problem.h"
#include "core/status_macros.h"
#include "jit/driver_api.h"
#include "jit/family.h"
#include "jit/kernel_store.h"
#include "jit/launcher.h"
#include "jit/specializer.h"
#include "tune/candidate_set.h"
#include "tune/graph_timer.h"
#include "tune/regime.h"
#include "tune/tuner.h"
#include "tune/tuning_key.h"

namespace jitgemm {

class Plan::Impl {
 public:
  GemmProblem problem;     // as asked, canonical: what Run checks pointers against
  PlannedProblem planned;  // what the backend computes (core/planned_problem.h)
  PlanInfo info;
  int pointer_alignment = 16;
  std::unique_ptr<Backend> backend;
};

namespace {

// Compiles every candidate at once on a few threads (no GPU work), so the
// serial build-and-time loop of the tuner finds them in memory.
// Returns whether anything was compiled (rather than found in a cache).
bool PrecompileInParallel(const GemmProblem& p, const std::vector<jit::KernelConfig>& configs,
                          const Options& options, const jit::DeviceContext& device) {
  std::atomic<bool> compiled_any{false};
  std::vector<std::thread> threads;
  std::atomic<size_t> next{0};
  const size_t workers =
      std::min<size_t>(configs.size(), std::max(1u, std::thread::hardware_concurrency()));
  for (size_t t = 0; t < workers; ++t) {
    threads.emplace_back([&] {
      for (size_t i = next++; i < configs.size(); i = next++) {
        const jit::KernelSource src =
            jit::SpecializeFor(p, configs[i], device.target, options.pointer_alignment);
        bool compiled = false;
        jit::GetOptions get;
        get.compiled = &compiled;
        // Errors resurface, with context, when the tuner builds the candidate.
        (void)jit::KernelStore::Global().GetBinary(src, device.arch, get);
        if (compiled) compiled_any = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  return compiled_any;
}

absl::Status UseCublas(const GemmProblem& p, const Options& options, const std::string& reason,
                       Plan::Impl* impl) {
  JITGEMM_ASSIGN_OR_RETURN(impl->backend,
                           CreateCublasBackend(p, options, MakeJitElementwiseEpilogue));
  impl->info.backend = "cublas";
  impl->info.kernel_name = impl->backend->Describe();
  impl->info.reason = reason;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Plan> Plan::Create(const GemmProblem& problem, const Options& options) {
  JITGEMM_RETURN_IF_ERROR(ValidateProblem(problem));
  JITGEMM_RETURN_IF_ERROR(ValidateOptions(options));
  RecordProblem(problem, options);
  auto impl = std::make_shared<Impl>();
  impl->problem = Canonicalize(problem);
  impl->planned = PlanProblem(impl->problem, options);
  impl->pointer_alignment = options.pointer_alignment;
  const GemmProblem& p = impl->planned.problem;

  if (options.backend == BackendPolicy::kCublasOnly) {
    JITGEMM_RETURN_IF_ERROR(UseCublas(p, options, "backend policy is cublas", impl.get()));
    return Plan(std::move(impl));
  }

  JITGEMM_ASSIGN_OR_RETURN(const jit::DriverApi* api, jit::GetDriver());
  JITGEMM_ASSIGN_OR_RETURN(jit::DeviceContext device, jit::CurrentDevice(*api));
  if (!options.arch.empty() && options.arch != device.arch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.arch: ", options.arch, " does not match the current device (", device.arch, ")"));
  }
  // Nothing below may invalidate a capture the caller has in progress.
  jit::RelaxedCaptureScope relaxed(*api);
  const bool capturing = jit::DefaultStreamCapturing(*api);

  tune::TuneRequest request;
  request.candidates = tune::ProposeCandidates(p, device.target, options);
  const std::vector<jit::KernelConfig> configs = tune::JitConfigs(request.candidates);
  bool compiled_any = false;
  request.build = [&](const tune::Candidate& c) -> absl::StatusOr<std::unique_ptr<Backend>> {
    if (const auto* cublas = std::get_if<tune::CublasAlgorithm>(&c)) {
      ElementwiseEpilogueFactory elementwise = UnimplementedElementwiseEpilogue;
      if (cublas->elementwise) {
        elementwise = [config = *cublas->elementwise](const GemmProblem& q, const Options& o) {
          return MakeJitElementwiseEpilogueOf(q, o, config);
        };
      }
      return CreateCublasBackend(p, options, elementwise, cublas->index, cublas->activation_pass);
    }
    bool compiled = false;
    auto b = JitBackend::Create(p, std::get<jit::KernelConfig>(c), options, device, &compiled);
    compiled_any = compiled_any || compiled;
    if (!b.ok()) return b.status();
    return std::unique_ptr<Backend>(std::move(*b));
  };
  request.before_timing = [&] {
    if (configs.size() > 1 && options.jit_enabled &&
        PrecompileInParallel(p, configs, options, device)) {
      compiled_any = true;
    }
  };
  request.make_timer = [&]() -> absl::StatusOr<std::unique_ptr<tune::CandidateTimer>> {
    JITGEMM_ASSIGN_OR_RETURN(auto timer, tune::GraphTimer::Create(p));
    return std::unique_ptr<tune::CandidateTimer>(std::move(timer));
  };
  request.policy = options.tuning;
  request.margin = options.win_margin;
  request.regime = options.regime;
  request.reused_bytes = tune::ReusedBytes(p);
  request.call_bytes = tune::CallBytes(p);
  request.l2_bytes = tune::CurrentDeviceL2Bytes();
  request.capturing = capturing;
  request.cache = cache::DiskCache::Default();
  request.environment = tune::CurrentTuningEnvironment(*api, device);
  request.record_key_text = tune::TuningKeyText(p, options, request.environment);

  JITGEMM_ASSIGN_OR_RETURN(tune::TuneResult result, tune::SelectBackend(request));
  impl->backend = std::move(result.backend);
  const bool cublas_won = tune::IsCublas(result.winner);
  impl->info.backend = cublas_won ? "cublas" : "jit";
  impl->info.kernel_name = impl->backend->Describe();
  impl->info.compiled = compiled_any;
  impl->info.reason = result.reason;
  impl->info.candidate_us = result.candidate_us;
  if (!options.jit_enabled) {
    impl->info.reason =
        absl::StrCat("JITGEMM_JIT=off, served by ", cublas_won ? "cuBLAS" : "a cached kernel", "; ",
                     result.reason);
  }
  if (impl->planned.transposed) {
    impl->info.reason =
        absl::StrCat("planned as the transpose (row-major D^T = B^T A^T); ", impl->info.reason);
  }
  // Strict mode always says what served each plan, as deployments want to know.
  LogDecision(impl->problem, impl->info, /*force=*/!options.jit_enabled);
  return Plan(std::move(impl));
}

absl::Status Plan::Run(const GemmPointers& pointers, CUstream stream) const {
  if (impl_ == nullptr) return absl::FailedPreconditionError("Run on a moved-from Plan");
  JITGEMM_RETURN_IF_ERROR(CheckPointers(impl_->problem, pointers, impl_->pointer_alignment));
  if (impl_->planned.transposed) {
    GemmPointers swapped = pointers;
    std::swap(swapped.a, swapped.b);
    return impl_->backend->Run(swapped, stream);
  }
  return impl_->backend->Run(pointers, stream);
}

const GemmProblem& Plan::problem() const { return impl_->problem; }
const PlanInfo& Plan::info() const { return impl_->info; }

Plan::Plan(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Plan::~Plan() = default;

}  // namespace jitgemm
