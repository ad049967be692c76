// A Plan is one GemmProblem bound to the implementation that serves it: a JIT
// kernel specialised for the problem, or cuBLAS. Plan::Create does all slow
// work (validation, kernel selection, compile or cache load, workspace
// allocation); Plan::Run only checks pointers and launches, so it is safe
// inside CUDA graph capture: no allocation, no synchronisation, no compile and
// no file I/O happen there.
//
//   absl::StatusOr<jitgemm::Plan> plan = jitgemm::Plan::Create(problem);
//   if (!plan.ok()) return plan.status();
//   for (...) JITGEMM_CHECK_OK(plan->Run({.a = a, .b = b, .d = d}, stream));
//
// Plans are created for the CUDA context current on the calling thread (the
// device's primary context if none is current) and must run on streams of it.
//
// Thread safety: Create may be called from any number of threads at once.
// A Plan is immutable after creation and Run may be called from many threads.
// Copies share state, including the plan's scratch workspace (split-K kernels
// keep partial sums there): runs of one plan, or of its copies, must not
// overlap in time on different streams. Create one plan per stream for that;
// runs on one stream are always ordered.
#ifndef JITGEMM_PLAN_H_
#define JITGEMM_PLAN_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jitgemm/export.h"
#include "jitgemm/options.h"
#include "jitgemm/pointers.h"
#include "jitgemm/problem.h"

namespace jitgemm {

// What a plan chose, for logs, tools and tests.
struct PlanInfo {
  std::string backend;      // "jit" or "cublas"
  std::string kernel_name;  // e.g. "gemm_sm80_f16_64x64x32_w2x2_s3_bias_col_relu"
  std::string reason;       // why this implementation was chosen
  bool compiled = false;    // true when Create ran the compiler
  // Median microseconds per call of every timed candidate ("cublas" or a
  // kernel config), when the choice was measured (now or by a stored record).
  std::vector<std::pair<std::string, double>> candidate_us;
};

class JITGEMM_EXPORT Plan {
 public:
  class Impl;

  static absl::StatusOr<Plan> Create(const GemmProblem& problem,
                                     const Options& options = Options::FromEnvironment());

  // Launches the planned computation on `stream`.
  // REQUIRES: the pointers satisfy options.pointer_alignment and the problem's
  // extents; D does not overlap A or B (it may equal C with identical layout).
  absl::Status Run(const GemmPointers& pointers, CUstream stream) const;

  const GemmProblem& problem() const;
  const PlanInfo& info() const;

  Plan(const Plan&) = default;
  Plan& operator=(const Plan&) = default;
  Plan(Plan&&) noexcept = default;
  Plan& operator=(Plan&&) noexcept = default;
  ~Plan();

 private:
  explicit Plan(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace jitgemm

#endif  // JITGEMM_PLAN_H_
