#include "tune/rematch.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/graph_replay.h"

namespace jitgemm::tune {

bool IsCloseCall(const Choice& choice, double margin) {
  return choice.cublas >= 0 && choice.best_jit >= 0 &&
         choice.jit_ratio > 1.0 - margin - kRematchWindow &&
         choice.jit_ratio < 1.0 + kRematchSlowerWindow;
}

std::vector<int> RunnersUp(const std::vector<Timing>& timings, const Choice& choice) {
  if (choice.best_jit < 0) return {};
  const Timing& best = timings[choice.best_jit];
  std::vector<std::pair<double, int>> near;  // worse ratio to the best, index
  for (int i = 0; i < static_cast<int>(timings.size()); ++i) {
    const Timing& t = timings[i];
    if (i == choice.best_jit || t.is_cublas || t.pruned || t.us.size() != best.us.size()) continue;
    double worse = 0;
    bool ran = true;
    for (size_t k = 0; k < t.us.size() && ran; ++k) {
      ran = t.us[k] >= 0 && best.us[k] > 0;
      if (ran) worse = std::max(worse, t.us[k] / best.us[k]);
    }
    if (ran && worse < 1.0 + kRematchRunnersUpWindow) near.emplace_back(worse, i);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  if (near.size() > static_cast<size_t>(kRematchRunnersUp)) near.resize(kRematchRunnersUp);
  std::vector<int> out;
  for (const auto& [ratio, i] : near) out.push_back(i);
  return out;
}

bool IsJitCloseCall(const Choice& choice, const std::vector<int>& runners_up) {
  return choice.best_jit >= 0 && choice.index == choice.best_jit && !runners_up.empty();
}

absl::Status Rematch(CandidateTimer& timer, const std::vector<Regime>& regimes,
                     const std::vector<RematchSide>& sides, MeasureBudget& budget) {
  const int n = static_cast<int>(sides.size());
  std::vector<std::vector<std::vector<double>>> samples(n);  // side, regime, samples
  for (int s = 0; s < n; ++s) {
    for (size_t k = 0; k < regimes.size(); ++k) samples[s].push_back({sides[s].timing->us.at(k)});
  }
  for (int round = 0; round < kRematchRounds; ++round) {
    // Round r starts with side r, so that no side is always timed first.
    for (int turn = 0; turn < n; ++turn) {
      const int s = (round + turn) % n;
      for (size_t k = 0; k < regimes.size(); ++k) {
        absl::StatusOr<Measurement> m =
            Measure(timer, *sides[s].backend, regimes[k], /*best_us=*/-1, /*protect=*/true, budget,
                    /*max_replays=*/1);
        if (!m.ok()) return m.status();
        samples[s][k].push_back(m->us);
      }
    }
  }
  for (int s = 0; s < n; ++s) {
    for (size_t k = 0; k < regimes.size(); ++k) {
      sides[s].timing->us[k] = MedianOf(std::move(samples[s][k]));
    }
  }
  return absl::OkStatus();
}

}  // namespace jitgemm::tune
