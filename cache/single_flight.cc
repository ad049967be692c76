#include "cache/single_flight.h"

#include "cache/mutex_lock.h"

namespace jitgemm::cache {

absl::StatusOr<std::string> SingleFlight::Do(const std::string& key,
                                             absl::FunctionRef<absl::StatusOr<std::string>()> work,
                                             bool* shared) {
  std::shared_ptr<Flight> flight;
  bool leader = false;
  {
    MutexLock lock(&mu_);
    std::shared_ptr<Flight>& slot = flights_[key];
    if (slot == nullptr) {
      slot = std::make_shared<Flight>();
      leader = true;
    } else {
      ++slot->joined;
    }
    flight = slot;
  }
  if (shared != nullptr) *shared = !leader;
  if (!leader) {
    MutexLock lock(&flight->mu);
    lock.Await(absl::Condition(&flight->done));
    return flight->result;
  }

  absl::StatusOr<std::string> result = work();
  // Leave the table before publishing: a caller arriving after this point
  // starts a new flight (and finds the stored entry on disk) instead of
  // joining a finished one, so nothing, in particular no error, outlives it.
  {
    MutexLock lock(&mu_);
    flights_.erase(key);
  }
  {
    MutexLock lock(&flight->mu);
    flight->result = result;
    flight->done = true;
  }
  return result;
}

size_t SingleFlight::Joined(const std::string& key) const {
  MutexLock lock(&mu_);
  auto it = flights_.find(key);
  return it == flights_.end() ? 0 : it->second->joined;
}

size_t SingleFlight::InFlight() const {
  MutexLock lock(&mu_);
  return flights_.size();
}

}  // namespace jitgemm::cache
