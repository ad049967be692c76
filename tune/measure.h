// The budget of choosing: how much timing one candidate gets, and when it
// stops early. Every candidate costs a fixed amount of GPU time rather than a
// fixed number of calls, so choosing for an 11 ms GEMM costs about as much
// as for a 10 µs one, and a candidate clearly behind the best so far stops
// after its first short measurement.
//
//   1. one warm-up call and one timed eager call (s µs) size a graph of
//      clamp(kGraphBudgetUs / s, 1, 40) launches (always at least 1 call);
//   2. the graph is replayed once untimed, then once timed (t1);
//   3. unless the candidate is protected (cuBLASLt's own first choice, the
//      reference every other candidate is compared with), it stops here
//      when t1 > best * (1 + kPruneMargin), best being the fastest median of
//      this regime so far: a candidate 30% behind is not going to be chosen;
//   4. otherwise replays continue until kCandidateBudgetUs of GPU time, at
//      least kMinReplays and at most kMaxReplays in all; the median is its
//      time. Once the whole choice has spent kTotalBudgetUs, later
//      candidates get the first replay only.
//
// On an H100 this bounds a 20 ms candidate to ~6 calls (~0.12 s) and an
// 8192^3 one (1.5 ms, 2 per graph) to ~14 calls.
//
// Thread safety: functions of their arguments; a MeasureBudget belongs to
// one tuning run.
#ifndef JITGEMM_TUNE_MEASURE_H_
#define JITGEMM_TUNE_MEASURE_H_

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "tune/graph_timer.h"
#include "tune/regime.h"

namespace jitgemm::tune {

inline constexpr double kGraphBudgetUs = 3000;       // GPU time of one replay
inline constexpr double kCandidateBudgetUs = 15000;  // GPU time of one candidate's replays
inline constexpr double kTotalBudgetUs = 2.0e6;      // all candidates' timing, then minimal
inline constexpr double kPruneMargin = 0.30;
inline constexpr int kMinReplays = 3;
inline constexpr int kMaxReplays = 5;
inline constexpr int kMaxLaunches = 40;

// What one tuning run has spent, in GPU microseconds of the calls it made
// (the timed figures times the calls; warm-ups counted at the first call's
// time).
struct MeasureBudget {
  double spent_us = 0;
  int pruned = 0;  // candidates stopped early
};

struct Measurement {
  double us = -1;       // median per call; the first replay alone when pruned
  bool pruned = false;  // stopped early, clearly behind
  int launches = 0;     // per graph
  int replays = 0;      // timed
};

// Measures `backend` in `regime`. `best_us` < 0: nothing measured yet in this
// regime (no pruning). `protect`: never stopped early. `max_replays` caps the
// timed replays below kMaxReplays (a second look at a candidate needs fewer).
absl::StatusOr<Measurement> Measure(CandidateTimer& timer, const Backend& backend, Regime regime,
                                    double best_us, bool protect, MeasureBudget& budget,
                                    int max_replays = kMaxReplays);

}  // namespace jitgemm::tune

#endif  // JITGEMM_TUNE_MEASURE_H_
