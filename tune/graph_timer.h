// Times a candidate the way BENCHMARKS.md measures: a CUDA graph of many
// launches, replayed several times between CUDA events, median per launch.
// Inputs live in the timer's own scratch buffers (the user's buffers are
// never touched) and rotate over enough copies that they do not sit in L2
// when the real workload would stream them.
//
// Thread safety: one timer per thread.
#ifndef JITGEMM_TUNE_GRAPH_TIMER_H_
#define JITGEMM_TUNE_GRAPH_TIMER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "jitgemm/problem.h"

namespace jitgemm::tune {

// The seam tests replace with a fake clock.
class CandidateTimer {
 public:
  virtual ~CandidateTimer() = default;
  // Median microseconds per call of `backend` on this timer's problem.
  virtual absl::StatusOr<double> MedianUs(const Backend& backend) = 0;
};

class GraphTimer final : public CandidateTimer {
 public:
  // Allocates and fills scratch operands for `problem` (canonical) on the
  // current device. FailedPrecondition inside stream capture or without memory.
  static absl::StatusOr<std::unique_ptr<GraphTimer>> Create(const GemmProblem& problem);
  ~GraphTimer() override;

  absl::StatusOr<double> MedianUs(const Backend& backend) override;
  int copies() const { return static_cast<int>(sets_.size()); }

 private:
  GraphTimer() = default;
  struct Set {
    void* a = nullptr;
    void* b = nullptr;
    void* c = nullptr;
    void* bias = nullptr;
  };
  GemmProblem problem_;
  std::vector<Set> sets_;
  void* d_ = nullptr;
  void* stream_ = nullptr;  // cudaStream_t
};

}  // namespace jitgemm::tune

#endif  // JITGEMM_TUNE_GRAPH_TIMER_H_
