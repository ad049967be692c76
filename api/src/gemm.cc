#include "jitgemm/gemm.h"

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "core/problem_signature.h"
#include "core/status_macros.h"
#include "jit/driver_api.h"
#include "jit/single_flight.h"

namespace jitgemm {
namespace {

std::string OptionsKey(const Options& o) {
  return absl::StrCat(static_cast<int>(o.backend), ",", static_cast<int>(o.tuning), ",",
                      o.jit_enabled, ",", o.allow_tf32, ",", o.pdl, ",", o.constant_b, ",",
                      o.pointer_alignment, ",", o.win_margin, ",", o.arch, ",",
                      static_cast<int>(o.regime));
}

}  // namespace

absl::Status Gemm(const GemmProblem& problem, const GemmPointers& pointers, CUstream stream,
                  const Options& options) {
  // One plan per (context, stream, problem, options): a plan is valid in the
  // context it was made in, and runs of one plan must not overlap on
  // different streams (its workspace), which runs on one stream never do.
  static auto* const kPlans = new jit::SingleFlight<Plan>();
  JITGEMM_RETURN_IF_ERROR(ValidateProblem(problem));
  CUcontext context = nullptr;
  if (auto api = jit::GetDriver(); api.ok()) (*api)->cuCtxGetCurrent(&context);
  const std::string key =
      absl::StrFormat("%s|%s|ctx=%p|stream=%p", ProblemSignature(Canonicalize(problem)),
                      OptionsKey(options), static_cast<void*>(context), static_cast<void*>(stream));
  JITGEMM_ASSIGN_OR_RETURN(auto plan,
                           kPlans->Get(key, [&]() -> absl::StatusOr<std::shared_ptr<const Plan>> {
                             JITGEMM_ASSIGN_OR_RETURN(Plan p, Plan::Create(problem, options));
                             return std::make_shared<const Plan>(std::move(p));
                           }));
  return plan->Run(pointers, stream);
}

}  // namespace jitgemm
