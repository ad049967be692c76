#include "tune/rematch.h"

#include <utility>
#include <vector>

#include "core/graph_replay.h"

namespace jitgemm::tune {

bool IsCloseCall(const Choice& choice, double margin) {
  return choice.cublas >= 0 && choice.best_jit >= 0 &&
         choice.jit_ratio > 1.0 - margin - kRematchWindow &&
         choice.jit_ratio < 1.0 + kRematchWindow;
}

absl::Status Rematch(CandidateTimer& timer, const std::vector<Regime>& regimes,
                     const Backend& jit_backend, Timing& jit, const Backend& cublas_backend,
                     Timing& cublas, MeasureBudget& budget) {
  struct Side {
    const Backend* backend;
    Timing* timing;
    std::vector<std::vector<double>> samples;  // per regime
  };
  Side sides[2] = {{&jit_backend, &jit, {}}, {&cublas_backend, &cublas, {}}};
  for (Side& side : sides) {
    for (size_t k = 0; k < regimes.size(); ++k) side.samples.push_back({side.timing->us.at(k)});
  }
  for (int round = 0; round < kRematchRounds; ++round) {
    // The JIT kernel goes first in even rounds, cuBLAS in odd ones.
    for (int turn = 0; turn < 2; ++turn) {
      Side& side = sides[(round + turn) % 2];
      for (size_t k = 0; k < regimes.size(); ++k) {
        absl::StatusOr<Measurement> m =
            Measure(timer, *side.backend, regimes[k], /*best_us=*/-1, /*protect=*/true, budget,
                    /*max_replays=*/1);
        if (!m.ok()) return m.status();
        side.samples[k].push_back(m->us);
      }
    }
  }
  for (Side& side : sides) {
    for (size_t k = 0; k < regimes.size(); ++k) {
      side.timing->us[k] = MedianOf(std::move(side.samples[k]));
    }
  }
  return absl::OkStatus();
}

}  // namespace jitgemm::tune
