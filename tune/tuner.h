// The tuner: chooses the backend of a plan among JIT configs and cuBLAS by
// measured time (tune/selection.h), persists the decision as a tuning record
// in the shared cache so every process and rank makes the same choice, and
// never times inside stream capture.
//
//   stored record (valid for this device, driver, cuBLAS and library)
//     -> its winner
//   else heuristic policy, capture in progress or no timer
//     -> the first JIT candidate that builds, else cuBLAS (nothing stored)
//   else (one tuner per problem across processes, via the cache's key lock)
//     build every candidate, time each in every regime to time
//     (tune/regime.h) within the budget (tune/measure.h), apply the rule
//     (tune/selection.h), store
//
// A stored record decided in other regimes than this request needs (one made
// before regimes existed: streaming only) is retuned when timing is possible,
// and used as it is otherwise.
//
// Thread safety: SelectBackend may run concurrently; the callbacks must be
// thread-compatible for the calling thread.
#ifndef JITGEMM_TUNE_TUNER_H_
#define JITGEMM_TUNE_TUNER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "cache/disk_cache.h"
#include "cache/tuning_record.h"
#include "jitgemm/options.h"
#include "tune/candidate_set.h"
#include "tune/graph_timer.h"
#include "tune/regime.h"
#include "tune/tuning_key.h"

namespace jitgemm::tune {

struct TuneRequest {
  // The candidate set (ProposeCandidates): JIT configs best guess first, then
  // cuBLASLt algorithms. Every candidate is built by `build`.
  std::vector<Candidate> candidates;
  std::function<absl::StatusOr<std::unique_ptr<Backend>>(const Candidate&)> build;
  // Called once before the first candidate is built for timing, and not at
  // all when a stored decision or the heuristic serves (so a warm process
  // reads only the cubin it runs). Plan::Create compiles every JIT
  // candidate here, in parallel. May be null.
  std::function<void()> before_timing;
  // Made on demand, only when timing is needed. Null: timing impossible.
  std::function<absl::StatusOr<std::unique_ptr<CandidateTimer>>()> make_timer;
  TuningPolicy policy = TuningPolicy::kHeuristic;
  double margin = 0.03;
  // Which regimes to time: RegimesToTime(regime, reused_bytes, l2_bytes,
  // call_bytes).
  TimingRegime regime = TimingRegime::kAuto;
  int64_t reused_bytes = 0;  // ReusedBytes(problem)
  int64_t l2_bytes = 0;      // the device's (CurrentDeviceL2Bytes); 0: unknown
  int64_t call_bytes = 0;    // CallBytes(problem); 0: unknown

  bool capturing = false;                   // stream capture in progress
  std::shared_ptr<cache::DiskCache> cache;  // null: nothing persisted
  std::string record_key_text;              // problem + options + environment
  TuningEnvironment environment;            // where a record made now holds
};

struct TuneResult {
  std::unique_ptr<Backend> backend;
  Candidate winner;
  std::string reason;
  // CandidateName and median microseconds of every timed candidate; empty
  // when not timed.
  std::vector<std::pair<std::string, double>> candidate_us;
  // The regimes that decided ("streaming", "resident"), in the order of the
  // record's times; candidate_us holds the first's, resident_us the
  // resident times when both decided.
  std::vector<std::string> regimes;
  std::vector<std::pair<std::string, double>> resident_us;
  bool from_record = false;
  // GPU microseconds this call spent timing (0 when not timed now).
  double timing_us = 0;
};

absl::StatusOr<TuneResult> SelectBackend(const TuneRequest& request);

}  // namespace jitgemm::tune

#endif  // JITGEMM_TUNE_TUNER_H_
