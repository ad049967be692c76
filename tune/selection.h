// The selection rule: which measured candidate serves a problem.
//
// A JIT kernel wins only if it beats cuBLAS by at least `margin` (0.03: its
// time is below 97% of cuBLAS's); ties and near-ties go to cuBLAS, so a user
// is never slower than cuBLAS by more than the noise of the measurement.
//
// Thread safety: pure function.
#ifndef JITGEMM_TUNE_SELECTION_H_
#define JITGEMM_TUNE_SELECTION_H_

#include <string>
#include <vector>

namespace jitgemm::tune {

struct Timing {
  std::string name;  // "cublas" or a KernelConfig's text
  bool is_cublas = false;
  double us = -1;  // median microseconds per call; < 0: could not run
};

struct Choice {
  int index = -1;  // into the timings; -1: nothing could run
  std::string reason;
};

Choice ChooseFastest(const std::vector<Timing>& timings, double margin);

}  // namespace jitgemm::tune

#endif  // JITGEMM_TUNE_SELECTION_H_
