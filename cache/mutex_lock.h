// MutexLock: absl::MutexLock that ThreadSanitizer can see through.
//
// Debian's libabsl is not built with ThreadSanitizer, so TSan cannot observe
// absl::Mutex's synchronisation and reports every access the mutex guards as
// a race, drowning real ones. Under TSan this guard adds the happens-before
// edges itself (__tsan_acquire / __tsan_release on the mutex); otherwise it is
// exactly absl::MutexLock. Use it for every absl::Mutex in cache/.
//
// Thread safety: like absl::MutexLock, a scoped guard owned by one thread.
#ifndef JITGEMM_CACHE_MUTEX_LOCK_H_
#define JITGEMM_CACHE_MUTEX_LOCK_H_

#include "absl/base/config.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#ifdef ABSL_HAVE_THREAD_SANITIZER
#include <sanitizer/tsan_interface.h>
#endif

namespace jitgemm::cache {

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(absl::Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
    Acquired();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() {
    Releasing();
    mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // absl::Mutex::Await, which lets go of the mutex while it waits.
  void Await(const absl::Condition& condition) {
    Releasing();
    mu_->Await(condition);
    Acquired();
  }

 private:
  void Acquired() {
#ifdef ABSL_HAVE_THREAD_SANITIZER
    __tsan_acquire(mu_);
#endif
  }
  void Releasing() {
#ifdef ABSL_HAVE_THREAD_SANITIZER
    __tsan_release(mu_);
#endif
  }

  absl::Mutex* const mu_;
};

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_MUTEX_LOCK_H_
