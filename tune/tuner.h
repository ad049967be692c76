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
//     build every candidate, time each with the timer, apply the rule, store
//
// Thread safety: SelectBackend may run concurrently; the callbacks must be
// thread-compatible for the calling thread.
#ifndef JITGEMM_TUNE_TUNER_H_
#define JITGEMM_TUNE_TUNER_H_

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
#include "tune/tuning_key.h"

namespace jitgemm::tune {

struct TuneRequest {
  // The candidate set (ProposeCandidates): JIT configs best guess first, then
  // cuBLASLt algorithms. Every candidate is built by `build`.
  std::vector<Candidate> candidates;
  std::function<absl::StatusOr<std::unique_ptr<Backend>>(const Candidate&)> build;
  // Made on demand, only when timing is needed. Null: timing impossible.
  std::function<absl::StatusOr<std::unique_ptr<CandidateTimer>>()> make_timer;
  TuningPolicy policy = TuningPolicy::kHeuristic;
  double margin = 0.03;
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
  bool from_record = false;
};

absl::StatusOr<TuneResult> SelectBackend(const TuneRequest& request);

}  // namespace jitgemm::tune

#endif  // JITGEMM_TUNE_TUNER_H_
