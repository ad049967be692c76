// jitgemm-warmup: fills the kernel cache for the problems of one or more
// manifests, for a named GPU architecture, with no GPU needed; or, with
// --check, proves that the cache already holds every one of those kernels.
//
//   jitgemm-warmup --arch=sm_90a [--jobs=N] [--tuning=heuristic|fast|exhaustive]
//                  [--sms=N] [--check] m.json...
//
// Compiles every kernel the heuristics would consider for each problem (its
// options in the manifest, or --tuning, decide how many) into the cache named by
// JITGEMM_CACHE_DIR (see docs/cache.md). Prints progress (a bar on a
// terminal, plain lines otherwise) and a summary; exits 1 if anything failed.
//
// --check compiles nothing: it resolves every kernel through the same path a
// process with JITGEMM_JIT=off takes (memory, read-only roots, writable root)
// and reports found / missing with the counters; exits 1 if any is missing.
// See docs/deploying.md.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "api/src/manifest_kernels.h"
#include "cache/disk_cache.h"
#include "cache/layout.h"
#include "cache/log.h"

ABSL_FLAG(std::string, arch, "",
          "Target architecture, e.g. sm_90a. Empty: the current GPU's (a GPU is then needed).");
ABSL_FLAG(int, jobs, 0, "Parallel compiles; 0: one per CPU core.");
ABSL_FLAG(std::string, tuning, "",
          "Override the manifests' tuning policy: heuristic (one kernel per problem), fast, "
          "exhaustive.");
ABSL_FLAG(int, sms, 0,
          "SM count of the target part; 0: the flagship of --arch (132 on sm_90, 108 below) or "
          "the current GPU's. Heuristics depend on it, so warm for the part you deploy on "
          "(H100 PCIe: 114).");
ABSL_FLAG(bool, check, false,
          "Compile nothing: resolve every kernel from the cache (read-only roots first) as "
          "JITGEMM_JIT=off would, report found/missing and counters, exit 1 if any is missing.");
ABSL_FLAG(bool, progress, true, "Show progress (a bar on a terminal, lines otherwise).");

namespace jitgemm {
namespace {

enum class Outcome { kCompiled, kCached, kFailed };

const char* OutcomeWord(Outcome o, bool check) {
  if (check) return o == Outcome::kFailed ? "MISSING " : "found   ";
  return o == Outcome::kCompiled ? "compiled" : o == Outcome::kCached ? "cached  " : "FAILED  ";
}

// How many of `tasks`' kernels have no entry in the writable root.
int KernelsNotOnDisk(cache::DiskCache& cache, const std::vector<tools::ManifestKernel>& tasks,
                     const std::string& arch) {
  int missing = 0;
  for (const tools::ManifestKernel& t : tasks) {
    absl::StatusOr<cache::CacheKey> key = tools::KernelCacheKey(t.source, arch);
    struct stat st;
    if (!key.ok() ||
        ::stat(cache::EntryPath(cache.root(), cache::EntryKind::kCubin, *key).c_str(), &st) != 0) {
      ++missing;
    }
  }
  return missing;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Fills the jitgemm kernel cache for the problems of manifests, or (--check) shows that "
      "the cache holds them all.\n"
      "usage: jitgemm-warmup --arch=sm_90a [--jobs=N] [--tuning=heuristic] [--check] "
      "manifest.json...");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() < 2) {
    std::fprintf(stderr, "jitgemm-warmup: no manifest given (see --help)\n");
    return 64;
  }
  const bool check = absl::GetFlag(FLAGS_check);
  absl::StatusOr<std::optional<TuningPolicy>> tuning =
      tools::ParseTuningOverride(absl::GetFlag(FLAGS_tuning));
  if (!tuning.ok()) {
    std::fprintf(stderr, "jitgemm-warmup: %s\n", std::string(tuning.status().message()).c_str());
    return 64;
  }
  absl::StatusOr<tools::TargetArch> target =
      tools::ResolveTarget(absl::GetFlag(FLAGS_arch), absl::GetFlag(FLAGS_sms));
  if (!target.ok()) {
    std::fprintf(stderr, "jitgemm-warmup: %s\n", std::string(target.status().message()).c_str());
    return absl::IsInvalidArgument(target.status()) || absl::GetFlag(FLAGS_arch).empty() ? 64 : 1;
  }
  const std::string& arch = target->arch;

  std::vector<std::string> paths(args.begin() + 1, args.end());
  absl::StatusOr<tools::ManifestKernels> work = tools::LoadManifestKernels(paths, *target, *tuning);
  if (!work.ok()) {
    std::fprintf(stderr, "jitgemm-warmup: %s\n", std::string(work.status().message()).c_str());
    return 1;
  }
  for (const std::string& line : work->invalid) {
    std::fprintf(stderr, "jitgemm-warmup: %s\n", line.c_str());
  }
  const std::vector<tools::ManifestKernel>& tasks = work->kernels;
  const int problems = work->problems;
  const int invalid = static_cast<int>(work->invalid.size());

  int jobs = absl::GetFlag(FLAGS_jobs);
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const bool tty = isatty(fileno(stdout));
  const bool progress = absl::GetFlag(FLAGS_progress);
  auto cache = cache::DiskCache::Default();
  std::printf("jitgemm-warmup%s: %d problems, %zu kernels for %s (%d SMs), %d jobs, cache %s\n",
              check ? " --check" : "", problems, tasks.size(), arch.c_str(),
              target->target.multiprocessors, jobs, cache->root().c_str());
  if (check && !cache->readonly_roots().empty()) {
    std::printf("read-only roots: %s\n", absl::StrJoin(cache->readonly_roots(), ":").c_str());
  }
  std::fflush(stdout);

  const auto start = std::chrono::steady_clock::now();
  std::vector<Outcome> outcomes(tasks.size(), Outcome::kFailed);
  std::vector<double> compile_ms(tasks.size(), -1);
  std::atomic<size_t> next{0}, done{0};
  std::mutex print_mu;
  std::vector<std::thread> pool;
  for (int t = 0; t < jobs; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < tasks.size(); i = next++) {
        auto r = tools::GetKernelBinary(tasks[i].source, arch, /*allow_compile=*/!check);
        outcomes[i] = !r.ok()       ? Outcome::kFailed
                      : r->compiled ? Outcome::kCompiled
                                    : Outcome::kCached;
        if (r.ok() && r->compiled) compile_ms[i] = r->compile_ms;
        const size_t n = ++done;
        std::lock_guard<std::mutex> lock(print_mu);
        if (!r.ok()) {
          std::fprintf(
              stderr, "%s%s %s (%s, %s): %s\n", tty ? "\r\033[K" : "", check ? "MISSING" : "FAILED",
              tasks[i].source.kernel_name.c_str(), tasks[i].problem.c_str(),
              tasks[i].manifest.c_str(),
              check ? std::string(r.status().message()).c_str() : r.status().ToString().c_str());
        }
        if (!progress) continue;
        if (tty) {
          const int width = 30, filled = static_cast<int>(width * n / tasks.size());
          std::printf("\r[%s%s] %zu/%zu %s", std::string(filled, '#').c_str(),
                      std::string(width - filled, '.').c_str(), n, tasks.size(),
                      tasks[i].source.kernel_name.c_str());
          std::printf("\033[K");
        } else {
          std::printf("[%zu/%zu] %s %s (%s)\n", n, tasks.size(), OutcomeWord(outcomes[i], check),
                      tasks[i].source.kernel_name.c_str(), tasks[i].problem.c_str());
        }
        std::fflush(stdout);
      }
    });
  }
  for (auto& t : pool) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int compiled = 0, cached = 0, failed = 0;
  for (Outcome o : outcomes) {
    compiled += o == Outcome::kCompiled;
    cached += o == Outcome::kCached;
    failed += o == Outcome::kFailed;
  }
  if (tty && progress) std::printf("\n");
  const auto counters = cache->counters();
  const auto store = tools::KernelStoreCounters();
  if (check) {
    absl::StatusOr<int> nvrtc = tools::NvrtcVersionForKey();
    std::printf("\n| arch | problems | invalid | kernels | found | missing | time |\n");
    std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
    std::printf("| %s | %d | %d | %zu | %d | %d | %.2f s |\n", arch.c_str(), problems, invalid,
                tasks.size(), cached, failed, seconds);
    std::printf("keys: nvrtc %s\n",
                nvrtc.ok() ? absl::StrCat(*nvrtc).c_str() : nvrtc.status().ToString().c_str());
    std::printf("kernel store: %llu compiles, %llu disk hits, %llu memory hits\n",
                static_cast<unsigned long long>(store.compiles),
                static_cast<unsigned long long>(store.disk_hits),
                static_cast<unsigned long long>(store.memory_hits));
    std::printf(
        "cache: %s (%s), read-only roots %s: %llu hits, %llu misses, %llu corrupt, "
        "%llu stores\n",
        cache->root().c_str(), cache::CacheModeName(cache->mode()),
        cache->readonly_roots().empty() ? "none"
                                        : absl::StrJoin(cache->readonly_roots(), ":").c_str(),
        static_cast<unsigned long long>(counters.hits),
        static_cast<unsigned long long>(counters.misses),
        static_cast<unsigned long long>(counters.corrupt),
        static_cast<unsigned long long>(counters.stores));
    std::printf("%s\n", failed + invalid > 0 ? "check FAILED" : "check passed");
    return failed + invalid > 0 ? 1 : 0;
  }
  std::vector<double> ms;
  for (double t : compile_ms) {
    if (t >= 0) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::printf(
      "\n| arch | problems | invalid | kernels | compiled | already cached | failed | time | "
      "compile ms median (min-max) |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  std::printf(
      "| %s | %d | %d | %zu | %d | %d | %d | %.1f s | %s |\n", arch.c_str(), problems, invalid,
      tasks.size(), compiled, cached, failed, seconds,
      ms.empty()
          ? "-"
          : absl::StrFormat("%.0f (%.0f-%.0f)", ms[ms.size() / 2], ms.front(), ms.back()).c_str());
  std::printf("cache: %s (%s), %llu stores, %llu store failures, %llu evictions\n",
              cache::QuotedForHumans(cache->root()).c_str(), cache::CacheModeName(cache->mode()),
              static_cast<unsigned long long>(counters.stores),
              static_cast<unsigned long long>(counters.store_failures),
              static_cast<unsigned long long>(counters.evictions));
  // A cap below the working set evicts what was just stored: say so, or the
  // warm-up looks done while the disk holds nothing.
  const int evicted = counters.evictions > 0 ? KernelsNotOnDisk(*cache, tasks, arch) : 0;
  if (evicted > 0) {
    std::printf(
        "the size cap (%llu bytes, JITGEMM_CACHE_MAX_BYTES) cannot hold what this warm-up "
        "stored: %llu entries evicted, %d of %zu kernels no longer on disk\n",
        static_cast<unsigned long long>(cache->settings().max_bytes),
        static_cast<unsigned long long>(counters.evictions), evicted, tasks.size());
  }
  return failed + invalid + evicted > 0 ? 1 : 0;
}

}  // namespace
}  // namespace jitgemm

int main(int argc, char** argv) { return jitgemm::Main(argc, argv); }
