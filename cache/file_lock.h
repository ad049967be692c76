// AcquireFileLock: wait, for a bounded time, for the advisory lock on one
// cache key, so concurrent cold processes compile a kernel once.
//
// The lock is a flock(2) on a file under <root>/v1/locks/. A holder that dies
// (crash, SIGKILL, OOM kill) loses its lock in the kernel at once, so a stale
// lock from a dead process never blocks anyone. A live holder is never broken:
// after `timeout` the waiter gives up the lock (DeadlineExceeded) and the
// caller does the work itself, which at worst duplicates a compile whose
// result is identical. Locking that cannot work at all (a read-only lock
// directory, EPERM, a filesystem without flock) is reported at once with a
// code other than DeadlineExceeded, and the caller proceeds unlocked.
//
// Thread safety: thread-compatible free function; concurrent calls on one path
// from different threads exclude each other like different processes do.
#ifndef JITGEMM_CACHE_FILE_LOCK_H_
#define JITGEMM_CACHE_FILE_LOCK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cache/env.h"

namespace jitgemm::cache {

// Polls env->TryLockFile(path) with growing sleeps (1 ms up to 25 ms) until
// it succeeds, fails for a reason waiting cannot fix, or `timeout` passes
// (DeadlineExceeded). `*waited` (optional) is set when the first try found the
// lock held.
absl::StatusOr<std::unique_ptr<FileLock>> AcquireFileLock(Env* env, const std::string& path,
                                                          absl::Duration timeout,
                                                          bool* waited = nullptr);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_FILE_LOCK_H_
