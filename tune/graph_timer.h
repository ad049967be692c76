// Times a candidate the way BENCHMARKS.md measures: a CUDA graph of many
// launches, replayed between CUDA events, microseconds per launch. Inputs
// live in the timer's own scratch buffers (the user's buffers are never
// touched). Streaming (tune/regime.h) rotates them over enough copies that
// they do not sit in L2, as a workload that streams its weights sees them;
// resident uses the first copy on every call.
//
// How many launches and replays a candidate gets is the tuner's budget
// (tune/measure.h); the timer only runs what it is asked.
//
// Thread safety: one timer per thread.
#ifndef JITGEMM_TUNE_GRAPH_TIMER_H_
#define JITGEMM_TUNE_GRAPH_TIMER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "jitgemm/problem.h"
#include "tune/regime.h"

namespace jitgemm::tune {

// One captured graph of a candidate's launches.
class Replayer {
 public:
  virtual ~Replayer() = default;
  // Microseconds per call of one timed replay of the whole graph.
  virtual absl::StatusOr<double> ReplayUs() = 0;
};

// The seam tests replace with a fake clock.
class CandidateTimer {
 public:
  virtual ~CandidateTimer() = default;
  // Readies `backend` in `regime` (one untimed call: module load, L2 state),
  // then times one eager call between events (launch included): enough to
  // size a graph, not to compare candidates.
  virtual absl::StatusOr<double> FirstCallUs(const Backend& backend, Regime regime) = 0;
  // Captures `launches` calls of `backend` in `regime` into one graph and
  // replays it once untimed.
  virtual absl::StatusOr<std::unique_ptr<Replayer>> Capture(const Backend& backend, Regime regime,
                                                            int launches) = 0;
};

class GraphTimer final : public CandidateTimer {
 public:
  // Allocates and fills scratch operands for `problem` (canonical) on the
  // current device. FailedPrecondition inside stream capture or without memory.
  static absl::StatusOr<std::unique_ptr<GraphTimer>> Create(const GemmProblem& problem);
  ~GraphTimer() override;

  absl::StatusOr<double> FirstCallUs(const Backend& backend, Regime regime) override;
  absl::StatusOr<std::unique_ptr<Replayer>> Capture(const Backend& backend, Regime regime,
                                                    int launches) override;
  int copies() const { return static_cast<int>(sets_.size()); }

 private:
  GraphTimer() = default;
  struct Set {
    void* a = nullptr;
    void* b = nullptr;
    void* c = nullptr;
    void* bias = nullptr;
  };
  absl::Status Launch(const Backend& backend, Regime regime, int iter, void* stream) const;

  GemmProblem problem_;
  std::vector<Set> sets_;
  void* d_ = nullptr;
  void* stream_ = nullptr;  // cudaStream_t
};

// The L2 size of the current device in bytes; 0 when it cannot be asked.
int64_t CurrentDeviceL2Bytes();

}  // namespace jitgemm::tune

#endif  // JITGEMM_TUNE_GRAPH_TIMER_H_
