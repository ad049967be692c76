#include "tests/cache/worker_group.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace jitgemm::cache::testing {
namespace {

// Fixed descriptor numbers in the child, reached by dup2, which (unlike the
// originals) are not close-on-exec.
constexpr int kChildReadyFd = 100;
constexpr int kChildGoFd = 101;

}  // namespace

WorkerGroup::WorkerGroup() {
  int ready[2], go[2];
  // Close-on-exec everywhere, so no child holds the go pipe's write end and
  // closing ours really delivers EOF to all of them.
  if (::pipe2(ready, O_CLOEXEC) != 0 || ::pipe2(go, O_CLOEXEC) != 0) std::abort();
  ready_read_ = ready[0];
  ready_write_ = ready[1];
  go_read_ = go[0];
  go_write_ = go[1];
}

WorkerGroup::~WorkerGroup() {
  for (pid_t pid : live_) {
    ::kill(pid, SIGKILL);
    int status;
    ::waitpid(pid, &status, 0);
  }
  for (int fd : {ready_read_, ready_write_, go_read_, go_write_}) {
    if (fd >= 0) ::close(fd);
  }
}

pid_t WorkerGroup::Spawn(const std::vector<std::string>& args) {
  std::vector<std::string> all = {JITGEMM_CACHE_WORKER_PATH};
  all.insert(all.end(), args.begin(), args.end());
  all.push_back(absl::StrCat("--ready-fd=", kChildReadyFd));
  all.push_back(absl::StrCat("--go-fd=", kChildGoFd));
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ready_write_, kChildReadyFd);
  posix_spawn_file_actions_adddup2(&actions, go_read_, kChildGoFd);
  pid_t pid = -1;
  int err = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return -1;
  live_.push_back(pid);
  return pid;
}

bool WorkerGroup::WaitForSignals(char signal, int count, absl::Duration timeout) {
  auto deadline = std::chrono::steady_clock::now() + absl::ToChronoMilliseconds(timeout);
  while (seen_[static_cast<unsigned char>(signal)] < count) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    struct pollfd p = {ready_read_, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    char buf[64];
    ssize_t got = ::read(ready_read_, buf, sizeof(buf));
    if (got <= 0) return false;
    for (ssize_t i = 0; i < got; ++i) ++seen_[static_cast<unsigned char>(buf[i])];
  }
  return true;
}

void WorkerGroup::Release() {
  if (go_write_ >= 0) ::close(go_write_);
  go_write_ = -1;
}

int WorkerGroup::Wait(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  live_.erase(std::remove(live_.begin(), live_.end(), pid), live_.end());
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

bool WorkerGroup::Running(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) == 0) return true;
  // Reaped now (or gone): never signal this pid again, it may be reused.
  live_.erase(std::remove(live_.begin(), live_.end(), pid), live_.end());
  return false;
}

std::vector<int> WorkerGroup::WaitAll() {
  std::vector<int> statuses;
  std::vector<pid_t> pids = live_;
  for (pid_t pid : pids) statuses.push_back(Wait(pid));
  return statuses;
}

}  // namespace jitgemm::cache::testing
