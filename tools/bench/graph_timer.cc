#include "tools/bench/graph_timer.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace jitgemm::bench {

Timing Summarize(std::vector<double> per_call) {
  Timing t;
  if (per_call.empty()) return t;
  const auto [min, max] = std::minmax_element(per_call.begin(), per_call.end());
  t.min_us = *min;
  t.max_us = *max;
  t.median_us = MedianOf(std::move(per_call));
  return t;
}

absl::StatusOr<Timing> TimeWithGraph(const LaunchFn& launch, cudaStream_t stream,
                                     const TimingConfig& config) {
  auto graph = CapturedGraph::Capture(launch, stream, config);
  if (!graph.ok()) return graph.status();
  std::vector<double> per_call;
  for (int rep = 0; rep < config.replays; ++rep) {
    auto us = (*graph)->ReplayUs();
    if (!us.ok()) return us.status();
    per_call.push_back(*us);
  }
  return Summarize(std::move(per_call));
}

}  // namespace jitgemm::bench
