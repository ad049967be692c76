// SingleFlight: a keyed in-memory table where the first caller of a key runs
// the work and every concurrent caller of that key waits for its result.
// A failure reaches every waiter and is not kept, so a later call retries.
//
// Thread safety: all methods may be called concurrently.
#ifndef JITGEMM_JIT_SINGLE_FLIGHT_H_
#define JITGEMM_JIT_SINGLE_FLIGHT_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace jitgemm::jit {

template <class T>
class SingleFlight {
 public:
  using Value = std::shared_ptr<const T>;

  // Returns the value for `key`, running `make` at most once at a time per key.
  // `*ran` (optional) says whether this call ran `make`.
  absl::StatusOr<Value> Get(const std::string& key, absl::FunctionRef<absl::StatusOr<Value>()> make,
                            bool* ran = nullptr) {
    std::shared_ptr<Slot> slot;
    bool owner = false;
    {
      absl::MutexLock lock(&mu_);
      auto& entry = slots_[key];
      if (entry == nullptr) {
        entry = std::make_shared<Slot>();
        owner = true;
      }
      slot = entry;
    }
    if (ran != nullptr) *ran = owner;
    if (!owner) {
      absl::MutexLock lock(&slot->mu);
      slot->mu.Await(absl::Condition(&slot->done));
      return slot->result;
    }
    absl::StatusOr<Value> result = make();
    {
      absl::MutexLock lock(&slot->mu);
      slot->result = result;
      slot->done = true;
    }
    if (!result.ok()) {
      absl::MutexLock lock(&mu_);
      auto it = slots_.find(key);
      if (it != slots_.end() && it->second == slot) slots_.erase(it);
    }
    return result;
  }

  // The value if present and finished; null otherwise. Never waits.
  Value Peek(const std::string& key) const {
    std::shared_ptr<Slot> slot;
    {
      absl::MutexLock lock(&mu_);
      auto it = slots_.find(key);
      if (it == slots_.end()) return nullptr;
      slot = it->second;
    }
    absl::MutexLock lock(&slot->mu);
    if (!slot->done || !slot->result.ok()) return nullptr;
    return *slot->result;
  }

  size_t size() const {
    absl::MutexLock lock(&mu_);
    return slots_.size();
  }

 private:
  struct Slot {
    absl::Mutex mu;
    bool done = false;
    absl::StatusOr<Value> result = absl::UnknownError("pending");
  };
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Slot>> slots_;
};

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_SINGLE_FLIGHT_H_
