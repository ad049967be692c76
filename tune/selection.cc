#include "tune/selection.h"

#include "absl/strings/str_format.h"

namespace jitgemm::tune {

Choice ChooseFastest(const std::vector<Timing>& timings, double margin) {
  int cublas = -1, best_jit = -1;
  for (int i = 0; i < static_cast<int>(timings.size()); ++i) {
    const Timing& t = timings[i];
    if (t.us < 0) continue;
    if (t.is_cublas) {
      // cuBLASLt's later suggestions must beat the earlier pick by the margin
      // too: near-ties go to the earlier (its own heuristic's first choice).
      if (cublas < 0 || t.us < timings[cublas].us * (1.0 - margin)) cublas = i;
    } else if (best_jit < 0 || t.us < timings[best_jit].us) {
      best_jit = i;  // first listed wins equal times: the heuristics' order
    }
  }
  Choice c;
  if (cublas < 0 && best_jit < 0) {
    c.reason = "no candidate could run";
    return c;
  }
  if (cublas < 0) {
    c.index = best_jit;
    c.reason = absl::StrFormat("fastest JIT kernel (%.2f us); cuBLAS could not serve it",
                               timings[best_jit].us);
    return c;
  }
  if (best_jit < 0) {
    c.index = cublas;
    c.reason = absl::StrFormat("cuBLAS (%.2f us); no JIT kernel could run", timings[cublas].us);
    return c;
  }
  const double jit = timings[best_jit].us, lib = timings[cublas].us;
  if (jit < lib * (1.0 - margin)) {
    c.index = best_jit;
    c.reason = absl::StrFormat("JIT %.2f us beats cuBLAS %.2f us by %.1f%% (margin %.0f%%)", jit,
                               lib, 100.0 * (1.0 - jit / lib), 100.0 * margin);
  } else {
    c.index = cublas;
    c.reason =
        absl::StrFormat("cuBLAS %.2f us; best JIT %.2f us is not %.0f%% faster (ties go to cuBLAS)",
                        lib, jit, 100.0 * margin);
  }
  return c;
}

}  // namespace jitgemm::tune
