// A separate process for the multi-process tests (RELIABILITY 5-8, 15): opens
// a DiskCache on --root, waits on --go-fd until the parent releases every
// worker at once, then runs GetOrCreate on --key. Its create() appends one
// line to --creates (O_APPEND, so concurrent lines never mix) and returns a
// payload derived from the key alone, so every process computes the same
// bytes. Exit status 0 when the result is the expected payload.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cache/disk_cache.h"
#include "cache/fault_env.h"
#include "cache/tuning_record.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {
namespace {

struct Options {
  std::string root, key, creates, out, stats;
  // The remote tier: a redis:// URL, its HMAC secret, and where to write
  // its counters (hits misses rejected stores errors lock_waits trips).
  std::string remote, secret, remote_stats;
  EntryKind kind = EntryKind::kCubin;
  int ready_fd = -1, go_fd = -1;
  bool lock_eperm = false, create_forever = false;
  int lock_timeout_ms = 60000, create_ms = 0, payload_bytes = 65536, tuning_records = 0;
  CrashPoint kill_at = CrashPoint::kNone;
};

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    auto number = [&](int* out) { return absl::SimpleAtoi(value, out); };
    bool ok = true;
    if (name == "--root")
      o->root = value;
    else if (name == "--key")
      o->key = value;
    else if (name == "--creates")
      o->creates = value;
    else if (name == "--out")
      o->out = value;
    else if (name == "--stats")
      o->stats = value;
    else if (name == "--remote")
      o->remote = value;
    else if (name == "--secret")
      o->secret = value;
    else if (name == "--remote-stats")
      o->remote_stats = value;
    else if (name == "--kind")
      o->kind = value == "tuning" ? EntryKind::kTuningRecord : EntryKind::kCubin;
    else if (name == "--ready-fd")
      ok = number(&o->ready_fd);
    else if (name == "--go-fd")
      ok = number(&o->go_fd);
    else if (name == "--lock-fault")
      o->lock_eperm = value == "eperm";
    else if (name == "--lock-timeout-ms")
      ok = number(&o->lock_timeout_ms);
    else if (name == "--create-ms")
      ok = number(&o->create_ms);
    else if (name == "--create-forever")
      o->create_forever = true;
    else if (name == "--payload-bytes")
      ok = number(&o->payload_bytes);
    else if (name == "--tuning-records")
      ok = number(&o->tuning_records);
    else if (name == "--kill-at") {
      if (value == "temp")
        o->kill_at = CrashPoint::kTempCreated;
      else if (value == "mid")
        o->kill_at = CrashPoint::kMidWrite;
      else if (value == "rename")
        o->kill_at = CrashPoint::kBeforeRename;
      else
        ok = false;
    } else
      ok = false;
    if (!ok) {
      std::fprintf(stderr, "cache_worker: bad argument '%s'\n", arg.c_str());
      return false;
    }
  }
  return !o->root.empty() && !o->key.empty();
}

void Signal(int fd, char c) {
  if (fd >= 0) (void)!::write(fd, &c, 1);
}

bool WriteFile(const std::string& path, const std::string& data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  return ::close(fd) == 0 && ok;
}

void AppendLine(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) std::abort();
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::abort();
  ::close(fd);
}

TuningRecord RecordFor(const std::string& problem) {
  TuningRecord r;
  r.device_name = "NVIDIA H100 80GB HBM3";
  r.sm_count = 132;
  r.driver_version = 13000;
  r.cublas_version = 130000;
  r.library_version = "0.1.0";
  r.problem_signature = problem;
  r.winner = "jit:" + problem;
  r.candidate_us = {{"cublasLt", 10.0}, {"jit:" + problem, 9.0}};
  r.reason = "jit faster";
  return r;
}

int Run(const Options& o) {
  FaultEnv fault_env(Env::Default());
  if (o.lock_eperm) fault_env.FailOp(FaultOp::kLock, EPERM);
  // A real death: the kernel closes descriptors and drops flocks, nothing
  // else is cleaned up.
  if (o.kill_at != CrashPoint::kNone) fault_env.CrashAt(o.kill_at, [] { ::raise(SIGKILL); });
  CacheSettings settings;
  settings.root = o.root;
  settings.mode = CacheMode::kReadWrite;
  settings.max_bytes = uint64_t{1} << 40;
  settings.lock_timeout = absl::Milliseconds(o.lock_timeout_ms);
  if (!o.remote.empty()) {
    absl::StatusOr<RemoteEndpoint> endpoint = ParseRemoteUrl(o.remote);
    if (!endpoint.ok()) return 2;
    settings.remote.enabled = true;
    settings.remote.endpoint = *endpoint;
    settings.remote.secret = o.secret;
  }
  std::shared_ptr<DiskCache> cache = DiskCache::Open(settings, &fault_env);
  if (cache->mode() != CacheMode::kReadWrite) return 3;

  Signal(o.ready_fd, 'r');
  // Every worker blocks here until the parent closes the pipe's write end,
  // which wakes them all at the same moment.
  for (char c; o.go_fd >= 0;) {
    ssize_t n = ::read(o.go_fd, &c, 1);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }

  if (o.tuning_records > 0) {
    // Each process writes records for its own problems, concurrently with
    // the others; then reads them all back.
    for (int i = 0; i < o.tuning_records; ++i) {
      std::string problem = absl::StrCat(o.key, "-", i);
      StoreTuningRecord(*cache, MakeCacheKey("tuning:" + problem), RecordFor(problem));
    }
    for (int i = 0; i < o.tuning_records; ++i) {
      std::string problem = absl::StrCat(o.key, "-", i);
      absl::StatusOr<TuningRecord> r =
          LoadTuningRecord(*cache, MakeCacheKey("tuning:" + problem), RecordFor(problem),
                           [](std::string_view) { return true; });
      if (!r.ok() || !(*r == RecordFor(problem))) return 4;
    }
    return 0;
  }

  const CacheKey key = MakeCacheKey(o.key);
  const std::string expected = testing::PayloadFor(o.key, static_cast<size_t>(o.payload_bytes));
  absl::StatusOr<std::string> result =
      cache->GetOrCreate(key, o.kind, [&]() -> absl::StatusOr<std::string> {
        if (!o.creates.empty()) AppendLine(o.creates, absl::StrCat(::getpid(), "\n"));
        Signal(o.ready_fd, 'c');
        if (o.create_forever) {
          for (;;) ::pause();
        }
        if (o.create_ms > 0) absl::SleepFor(absl::Milliseconds(o.create_ms));
        return expected;
      });
  if (!result.ok()) {
    std::fprintf(stderr, "cache_worker: %s\n", result.status().ToString().c_str());
    return 1;
  }
  if (!o.out.empty() && !WriteFile(o.out, *result)) return 1;
  if (!o.stats.empty()) {
    CacheCounters c = cache->counters();
    WriteFile(o.stats, absl::StrCat(c.hits, " ", c.misses, " ", c.compiles, " ", c.stores, " ",
                                    c.lock_waits, " ", c.store_failures, " ", c.corrupt, "\n"));
  }
  if (!o.remote_stats.empty() && cache->remote() != nullptr) {
    RemoteCounters r = cache->remote()->counters();
    WriteFile(o.remote_stats,
              absl::StrCat(r.hits, " ", r.misses, " ", r.rejected, " ", r.stores, " ", r.errors,
                           " ", r.lock_waits, " ", r.breaker_trips, "\n"));
  }
  return *result == expected ? 0 : 5;
}

}  // namespace
}  // namespace jitgemm::cache

int main(int argc, char** argv) {
  jitgemm::cache::Options options;
  if (!jitgemm::cache::Parse(argc, argv, &options)) {
    std::fprintf(stderr, "usage: cache_worker --root=DIR --key=TEXT [options]\n");
    return 2;
  }
  return jitgemm::cache::Run(options);
}
