// Close calls timed again. The tuner times its candidates one after another,
// cuBLASLt's first choice first. Under a heavy GEMM an H100 sits at its power
// cap and its clock moves by several percent within one tuning run
// (bench/results/2026-11-26-h100-s3-power.log), so whichever candidate ran
// first, on the cooler card, can look a few percent faster than it is: enough
// to flip a decision made with a 3% margin. When the best JIT kernel's worse
// ratio to the cuBLAS pick lies within kRematchWindow below the margin or
// kRematchSlowerWindow above parity, both are timed kRematchRounds more times
// (one graph replay each, after its warm-up), each round starting with the
// next one, and each keeps the median of all its measurements in each regime;
// the rule (tune/selection.h) then decides on those. The window reaches
// further on the slower side because that is where the card's warm-up puts
// the kernels timed after the reference: a first look can read up to about
// 17% slow (docs/tuning.md, "Close calls"). Up to kRematchRunnersUp other JIT
// kernels within kRematchRunnersUpWindow of the best one join them: the same
// drift can put the wrong JIT kernel first, and it does so where a JIT kernel
// wins clearly too: there the best one and its runners-up are timed again
// (IsJitCloseCall; docs/tuning.md, "Candidate order under the power cap").
// The cuBLAS pick is always timed again with them, so that no first look is
// weighed against a second one.
// That costs two to four candidates' worth of calls on top of a tuning run.
//
// Thread safety: functions of their arguments.
#ifndef JITGEMM_TUNE_REMATCH_H_
#define JITGEMM_TUNE_REMATCH_H_

#include <vector>

#include "absl/status/status.h"
#include "backends/backend.h"
#include "tune/graph_timer.h"
#include "tune/measure.h"
#include "tune/regime.h"
#include "tune/selection.h"

namespace jitgemm::tune {

inline constexpr double kRematchWindow = 0.05;
inline constexpr double kRematchRunnersUpWindow = 0.10;
inline constexpr double kRematchSlowerWindow = 0.25;
inline constexpr int kRematchRounds = 2;
inline constexpr int kRematchRunnersUp = 2;

// Whether `choice` (with `margin`) is close enough to be timed again: both a
// cuBLAS pick and a JIT kernel ran, and the JIT kernel's worse ratio lies in
// (1 - margin - kRematchWindow, 1 + kRematchSlowerWindow).
bool IsCloseCall(const Choice& choice, double margin);

// The JIT kernels, other than `choice`'s best one, whose time lies within
// kRematchRunnersUpWindow of the best one's in every regime, nearest first, at
// most kRematchRunnersUp (indices into `timings`; none stopped early).
std::vector<int> RunnersUp(const std::vector<Timing>& timings, const Choice& choice);

// Whether a choice that is no close call (IsCloseCall) should still be timed
// again: the best JIT kernel won and has runners-up (RunnersUp's).
bool IsJitCloseCall(const Choice& choice, const std::vector<int>& runners_up);

// One candidate to time again: its backend and its timing.
struct RematchSide {
  const Backend* backend;
  Timing* timing;
};

// Times every side again in every regime of `regimes`, kRematchRounds rounds,
// round r starting with side r (mod the count), and replaces each one's time
// per regime by the median of its first measurement and these. On a
// measurement error the times are left as they were and the error is
// returned.
absl::Status Rematch(CandidateTimer& timer, const std::vector<Regime>& regimes,
                     const std::vector<RematchSide>& sides, MeasureBudget& budget);

}  // namespace jitgemm::tune

#endif  // JITGEMM_TUNE_REMATCH_H_
