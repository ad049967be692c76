#include "tune/selection.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace jitgemm::tune {
namespace {

size_t RegimeCount(const std::vector<Timing>& timings, const std::vector<std::string>& regimes) {
  size_t n = std::max<size_t>(regimes.size(), 1);
  for (const Timing& t : timings) n = std::max(n, t.us.size());
  return n;
}

bool Runs(const Timing& t, size_t regimes) {
  if (t.pruned || t.us.size() < regimes) return false;
  return std::all_of(t.us.begin(), t.us.end(), [](double us) { return us >= 0; });
}

// The worse, over regimes, of `t`'s time divided by `ref`'s.
double WorseRatio(const Timing& t, const std::vector<double>& ref) {
  double worst = 0;
  for (size_t r = 0; r < ref.size(); ++r) worst = std::max(worst, t.us[r] / ref[r]);
  return worst;
}

// The better, over regimes, of the same ratios.
double BetterRatio(const Timing& t, const std::vector<double>& ref) {
  double best = t.us[0] / ref[0];
  for (size_t r = 1; r < ref.size(); ++r) best = std::min(best, t.us[r] / ref[r]);
  return best;
}

// A later cuBLAS candidate replaces the pick: faster by the margin in every
// regime, or by the margin in one and level (kRegimeTie) in the others.
bool ReplacesCublasPick(const Timing& t, const std::vector<double>& pick, double margin) {
  const double worse = WorseRatio(t, pick);
  return worse < 1.0 - margin || (worse <= 1.0 + kRegimeTie && BetterRatio(t, pick) < 1.0 - margin);
}

// "9.60 us" for one regime, "9.60 / 5.10 us (streaming / resident)" for more.
std::string Times(const Timing& t, const std::vector<std::string>& regimes) {
  std::vector<std::string> parts;
  for (double us : t.us) parts.push_back(absl::StrFormat("%.2f", us));
  std::string out = absl::StrCat(absl::StrJoin(parts, " / "), " us");
  if (t.us.size() > 1 && regimes.size() == t.us.size()) {
    absl::StrAppend(&out, " (", absl::StrJoin(regimes, " / "), ")");
  }
  return out;
}

}  // namespace

Choice ChooseFastest(const std::vector<Timing>& timings, double margin,
                     const std::vector<std::string>& regimes) {
  const size_t n_regimes = RegimeCount(timings, regimes);
  int cublas = -1;
  for (int i = 0; i < static_cast<int>(timings.size()); ++i) {
    const Timing& t = timings[i];
    if (!t.is_cublas || !Runs(t, n_regimes)) continue;
    // cuBLASLt's later suggestions must beat the earlier pick by the margin:
    // near-ties go to the earlier (its heuristic's first choice, the
    // algorithm PyTorch runs).
    if (cublas < 0 || ReplacesCublasPick(t, timings[cublas].us, margin)) cublas = i;
  }
  // The reference of each regime: the cuBLAS pick, else the fastest time.
  std::vector<double> ref(n_regimes, -1);
  for (size_t r = 0; r < n_regimes; ++r) {
    if (cublas >= 0) {
      ref[r] = timings[cublas].us[r];
      continue;
    }
    for (const Timing& t : timings) {
      if (Runs(t, n_regimes) && (ref[r] < 0 || t.us[r] < ref[r])) ref[r] = t.us[r];
    }
  }
  int best_jit = -1;
  double best_ratio = 0;
  for (int i = 0; i < static_cast<int>(timings.size()); ++i) {
    const Timing& t = timings[i];
    if (t.is_cublas || !Runs(t, n_regimes)) continue;
    const double ratio = WorseRatio(t, ref);
    if (best_jit < 0 || ratio < best_ratio) {  // first listed wins ties: the heuristics' order
      best_jit = i;
      best_ratio = ratio;
    }
  }
  Choice c;
  c.cublas = cublas;
  c.best_jit = best_jit;
  c.jit_ratio = best_ratio;
  if (cublas < 0 && best_jit < 0) {
    c.reason = "no candidate could run";
    return c;
  }
  const std::string in_every =
      n_regimes > 1 ? absl::StrCat(" in every regime (", absl::StrJoin(regimes, ", "), ")") : "";
  if (cublas < 0) {
    c.index = best_jit;
    c.reason = absl::StrFormat("fastest JIT kernel (%s); cuBLAS could not serve it",
                               Times(timings[best_jit], regimes));
    return c;
  }
  if (best_jit < 0) {
    c.index = cublas;
    c.reason =
        absl::StrFormat("cuBLAS (%s); no JIT kernel could run", Times(timings[cublas], regimes));
    return c;
  }
  const Timing& jit = timings[best_jit];
  const Timing& lib = timings[cublas];
  if (best_ratio < 1.0 - margin) {
    c.index = best_jit;
    c.reason =
        absl::StrFormat("JIT %s beats cuBLAS %s by %.1f%%%s (margin %.0f%%)", Times(jit, regimes),
                        Times(lib, regimes), 100.0 * (1.0 - best_ratio), in_every, 100.0 * margin);
  } else {
    c.index = cublas;
    c.reason = absl::StrFormat("cuBLAS %s; best JIT %s is not %.0f%% faster%s (ties go to cuBLAS)",
                               Times(lib, regimes), Times(jit, regimes), 100.0 * margin, in_every);
  }
  return c;
}

}  // namespace jitgemm::tune
