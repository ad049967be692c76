// The selection rule: which measured candidate serves a problem.
//
// A JIT kernel wins only if it beats cuBLAS by at least `margin` (0.03: its
// time is below 97% of cuBLAS's); ties and near-ties go to cuBLAS, so a user
// is never slower than cuBLAS by more than the noise of the measurement.
// Among cuBLAS candidates (cuBLASLt's suggestions, in its order) a later one
// must also beat the earlier pick by `margin`: on an H100 the second
// suggestion for bf16 12288x4096, M = 64 timed equal to the first in the
// tuner (38.15 against 38.16 us) and ran 5% slower in the benchmark, while
// real wins are large (11.2 -> 9.8 us at 2048x4096, M = 64).
//
// Several regimes (tune/regime.h): a candidate has one time per regime, and
// "beats by the margin" must hold in every one of them. Each candidate's
// times are divided by the reference's in the same regime (the cuBLAS pick,
// or the fastest time of that regime when cuBLAS cannot serve); the candidate
// whose worse ratio is lowest is the best JIT kernel. So a JIT kernel 1.4x
// faster streaming but 5% slower resident loses to cuBLAS. A later cuBLAS
// candidate also replaces the pick where it beats it by the margin in one
// regime and is level in the others (at most kRegimeTie slower): cuBLASLt's
// fused GELU and its plain product + the elementwise pass timed 19.24 and
// 19.42 us streaming, 18.2 and 16.0 resident (f16 16 x 8192 x 999), and a
// plan had kept the fused call.
//
// Thread safety: pure function.
#ifndef JITGEMM_TUNE_SELECTION_H_
#define JITGEMM_TUNE_SELECTION_H_

#include <string>
#include <vector>

namespace jitgemm::tune {

// How much slower than the cuBLAS pick, in a regime, a later cuBLAS
// candidate may be and still count as level there: below the 1-2% the same
// call moves between tunings.
inline constexpr double kRegimeTie = 0.01;

struct Timing {
  std::string name;  // "cublas" or a KernelConfig's text
  bool is_cublas = false;
  // Median microseconds per call in each regime, in the order of the
  // regimes timed; fewer entries than regimes or one < 0: could not run.
  std::vector<double> us;
  // Stopped early, clearly behind (tune/measure.h): `us` holds its short
  // measurement, and it cannot win.
  bool pruned = false;
};

struct Choice {
  int index = -1;  // into the timings; -1: nothing could run
  std::string reason;
  // What the rule compared: the cuBLAS pick and the best JIT kernel (-1:
  // none), and the JIT kernel's worse ratio to the pick over the regimes.
  int cublas = -1;
  int best_jit = -1;
  double jit_ratio = 0;
};

// `regimes` names the regimes of Timing::us for the reason; with one regime
// (or none given) every candidate has one time.
Choice ChooseFastest(const std::vector<Timing>& timings, double margin,
                     const std::vector<std::string>& regimes = {});

}  // namespace jitgemm::tune

#endif  // JITGEMM_TUNE_SELECTION_H_
