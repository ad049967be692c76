#include "tune/measure.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "core/graph_replay.h"
#include "core/status_macros.h"

namespace jitgemm::tune {

absl::StatusOr<Measurement> Measure(CandidateTimer& timer, const Backend& backend, Regime regime,
                                    double best_us, bool protect, MeasureBudget& budget,
                                    int max_replays) {
  JITGEMM_ASSIGN_OR_RETURN(const double first_us, timer.FirstCallUs(backend, regime));
  const double single = std::max(first_us, 0.1);
  budget.spent_us += 2 * single;  // the warm-up and the timed call
  Measurement m;
  m.launches = std::clamp(static_cast<int>(kGraphBudgetUs / single), 1, kMaxLaunches);
  JITGEMM_ASSIGN_OR_RETURN(std::unique_ptr<Replayer> graph,
                           timer.Capture(backend, regime, m.launches));
  budget.spent_us += m.launches * single;  // the untimed replay
  std::vector<double> samples;
  JITGEMM_ASSIGN_OR_RETURN(const double t1, graph->ReplayUs());
  samples.push_back(t1);
  budget.spent_us += m.launches * t1;
  m.replays = 1;
  if (!protect && best_us > 0 && t1 > best_us * (1.0 + kPruneMargin)) {
    m.us = t1;
    m.pruned = true;
    ++budget.pruned;
    return m;
  }
  int replays =
      std::clamp(static_cast<int>(std::ceil(kCandidateBudgetUs / std::max(m.launches * t1, 0.1))),
                 kMinReplays, kMaxReplays);
  if (budget.spent_us > kTotalBudgetUs && !protect) replays = 1;
  replays = std::max(1, std::min(replays, max_replays));
  for (; m.replays < replays; ++m.replays) {
    JITGEMM_ASSIGN_OR_RETURN(const double t, graph->ReplayUs());
    samples.push_back(t);
    budget.spent_us += m.launches * t;
  }
  m.us = MedianOf(std::move(samples));
  return m;
}

}  // namespace jitgemm::tune
