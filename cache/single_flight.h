// SingleFlight: within one process, concurrent requests for the same key run
// the work once; the others wait and receive a copy of its result.
//
// This is the in-process half of "compile each key once"; the per-key file
// lock is the cross-process half. A failure reaches every waiter and is not
// remembered, so the next call after it runs the work again.
//
// Thread safety: Do may be called concurrently from any number of threads.
// REQUIRES: `work` must not call Do for the same key (it would wait on itself).
//
// Example:
//   SingleFlight flights;
//   bool shared = false;
//   absl::StatusOr<std::string> cubin = flights.Do(key.Hex(), compile, &shared);
#ifndef JITGEMM_CACHE_SINGLE_FLIGHT_H_
#define JITGEMM_CACHE_SINGLE_FLIGHT_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace jitgemm::cache {

class SingleFlight {
 public:
  // Runs `work` unless a call for `key` is in flight, in which case waits for
  // it. `*shared` (optional) is set to whether the result came from another
  // caller's run.
  absl::StatusOr<std::string> Do(const std::string& key,
                                 absl::FunctionRef<absl::StatusOr<std::string>()> work,
                                 bool* shared = nullptr);

  // Number of keys in flight now; for tests and stats.
  size_t InFlight() const;
  // How many callers have joined the flight for `key` now in progress (0 if
  // none); lets tests wait until every thread is really waiting.
  size_t Joined(const std::string& key) const;

 private:
  struct Flight {
    size_t joined = 0;  // guarded by the table's mu_
    absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
    absl::StatusOr<std::string> result ABSL_GUARDED_BY(mu);
  };

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Flight>> flights_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_SINGLE_FLIGHT_H_
