// Timing regimes: where a candidate's operands are when it is timed.
// Streaming rotates the inputs over copies that together exceed the L2, as a
// model whose layers stream their weights from DRAM sees them; resident runs
// on the same inputs every call, as a loop over one layer with a weight that
// stays in the L2 does. The two can prefer different kernels (1 x 32768 x 512
// bf16 on an H100: the small-M kernel chosen by streaming timings ran 8.82 us
// with its weight resident, cuBLAS 7.07), so where both can happen both are
// timed.
//
// Thread safety: pure functions.
#ifndef JITGEMM_TUNE_REGIME_H_
#define JITGEMM_TUNE_REGIME_H_

#include <cstdint>
#include <string>
#include <vector>

#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm::tune {

enum class Regime : int { kStreaming = 0, kResident = 1 };

// "streaming" or "resident": how tuning records and reasons name a regime.
const char* RegimeName(Regime regime);

// Below this share of a call's bytes, and where the call moves more than
// kResidentMinCallL2s times the L2, the weight's residency is not timed: a
// weight whose DRAM reads are at most 5% of the call's cannot move any
// kernel's time by the 3% margin through the L2, and timing the resident
// regime there only added the warming card's drift (docs/tuning.md,
// "Regimes").
inline constexpr double kResidentMinShare = 0.05;
inline constexpr int64_t kResidentMinCallL2s = 2;

// The regimes to time, in order: the declared one, else (auto) streaming and
// resident when `reused_bytes` fit in `l2_bytes`, unless they are less than
// kResidentMinShare of `call_bytes` and `call_bytes` exceed
// kResidentMinCallL2s L2s; else streaming only. `l2_bytes` <= 0 (unknown):
// streaming only. `call_bytes` <= 0 (unknown): the weight's size decides.
std::vector<Regime> RegimesToTime(TimingRegime declared, int64_t reused_bytes, int64_t l2_bytes,
                                  int64_t call_bytes = 0);

// The bytes a workload reuses across calls: B's span (the weight of x W^T,
// both halves of a gated one), every batch included, of a canonical problem.
int64_t ReusedBytes(const GemmProblem& canonical);

// The bytes one call reads and writes, every batch included: A, B (as
// ReusedBytes), C where beta is not 0 and D, each counted by its elements,
// not its span, so that strided layouts are not counted for their gaps, and
// a broadcast A or C once.
int64_t CallBytes(const GemmProblem& canonical);

// Names of `regimes`, in order.
std::vector<std::string> RegimeNames(const std::vector<Regime>& regimes);

}  // namespace jitgemm::tune

#endif  // JITGEMM_TUNE_REGIME_H_
