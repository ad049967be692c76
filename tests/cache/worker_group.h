// WorkerGroup: starts cache_worker processes (posix_spawn) that all block on
// one pipe, and releases them together by closing its write end.
#ifndef JITGEMM_TESTS_CACHE_WORKER_GROUP_H_
#define JITGEMM_TESTS_CACHE_WORKER_GROUP_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace jitgemm::cache::testing {

class WorkerGroup {
 public:
  WorkerGroup();
  // SIGKILLs and reaps any worker not yet waited for.
  ~WorkerGroup();
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  // Starts cache_worker with `args` plus the pipe arguments.
  pid_t Spawn(const std::vector<std::string>& args);
  // Waits until `count` workers have written `signal` ('r': ready, 'c': in
  // create) in total since the group began. False on timeout.
  bool WaitForSignals(char signal, int count, absl::Duration timeout = absl::Seconds(60));
  // Lets every worker blocked on the go pipe run.
  void Release();
  // Exit status of `pid`: its exit code, or 128 + the signal that killed it.
  int Wait(pid_t pid);
  // Whether `pid` is still running.
  bool Running(pid_t pid);
  // Waits for every worker spawned and not yet waited for; their statuses.
  std::vector<int> WaitAll();

 private:
  int ready_read_ = -1, ready_write_ = -1, go_read_ = -1, go_write_ = -1;
  std::vector<pid_t> live_;
  int seen_[256] = {};
};

}  // namespace jitgemm::cache::testing

#endif  // JITGEMM_TESTS_CACHE_WORKER_GROUP_H_
