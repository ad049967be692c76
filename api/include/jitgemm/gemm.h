// One-call convenience: plan (or reuse a plan from a process-wide table keyed by
// the current CUDA context, the stream, the problem and the options) and run. The first call for a problem does the slow
// work of Plan::Create; later calls only look the plan up and launch.
//
// Thread safety: safe from any number of threads. Not for use inside stream
// capture on a problem that was never run before (that would compile); create
// a Plan up front for graphs.
#ifndef JITGEMM_GEMM_H_
#define JITGEMM_GEMM_H_

#include "absl/status/status.h"
#include "jitgemm/export.h"
#include "jitgemm/options.h"
#include "jitgemm/plan.h"
#include "jitgemm/problem.h"

namespace jitgemm {

JITGEMM_EXPORT absl::Status Gemm(const GemmProblem& problem, const GemmPointers& pointers,
                                 CUstream stream,
                                 const Options& options = Options::FromEnvironment());

}  // namespace jitgemm

#endif  // JITGEMM_GEMM_H_
