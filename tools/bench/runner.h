// Runs one benchmark case: random inputs, the float64 reference, then per
// column (cuBLAS baselines and jitgemm plans) a correctness check on a
// NaN-poisoned output followed by graph timing.
//
// Thread safety: one case at a time per BenchContext.
#ifndef JITGEMM_TOOLS_BENCH_RUNNER_H_
#define JITGEMM_TOOLS_BENCH_RUNNER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jitgemm/options.h"
#include "tools/bench/context.h"
#include "tools/bench/graph_timer.h"
#include "tools/bench/suites.h"

namespace jitgemm::bench {

struct RunConfig {
  TimingConfig timing;
  int rotate = 0;                      // > 0 overrides every case's rotation
  Options plan_options;                // options of the jitgemm columns (a case may bring its own)
  std::optional<TuningPolicy> tuning;  // --tuning: overrides every case's policy
  std::vector<Impl> impls;             // empty: every column of the case
  // Also time cublas_mm and auto in both regimes (docs/tuning.md): streaming,
  // B rotated over enough copies to exceed twice the L2, and resident, the
  // same B every call.
  bool regimes = true;
  int reference_threads = 0;
};

struct CellResult {
  Impl impl = Impl::kCublasMm;
  absl::Status status;  // OK when measured
  bool wrong = false;   // the output failed the correctness check
  double rel_err = -1;  // relative Frobenius error; < 0 when not checked
  double tolerance = 0;
  double us = -1;      // median µs per call; < 0 when not measured
  double us_min = -1;  // fastest and slowest replay
  double us_max = -1;
  std::string plan;       // what ran
  double create_ms = -1;  // Plan::Create wall time (jitgemm columns)
  // Median µs per call in each regime (RunConfig::regimes); < 0 when not timed.
  double us_streaming = -1;
  double us_resident = -1;
};

// The columns timed in both regimes: auto against cuBLAS's first choice.
inline bool TimedInBothRegimes(Impl impl) { return impl == Impl::kAuto || impl == Impl::kCublasMm; }

// A column that cannot serve this problem (Unimplemented: no cuBLASLt
// algorithm, no JIT family) rather than one that broke. The auto plan must
// always serve, so it never counts as not applicable.
inline bool IsNotApplicable(const CellResult& cell) {
  return !cell.wrong && cell.impl != Impl::kAuto &&
         cell.status.code() == absl::StatusCode::kUnimplemented;
}

// True when the cell counts against the run's exit status.
inline bool IsFailure(const CellResult& cell) {
  return !cell.status.ok() && !IsNotApplicable(cell);
}

struct CaseResult {
  BenchCase bench_case;
  int rotate = 1;            // buffers actually rotated (memory may lower it)
  int streaming_copies = 0;  // B copies of the streaming regime; 0: regimes not timed
  double reference_seconds = 0;
  absl::Status status;  // a case-level failure (allocation, ...)
  std::vector<CellResult> cells;
  bool fatal = false;  // the CUDA context is unusable: stop the run
};

CaseResult RunCase(const BenchCase& bench_case, const RunConfig& config, BenchContext& context);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_RUNNER_H_
