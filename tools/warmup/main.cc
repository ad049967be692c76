// jitgemm-warmup: fills the kernel cache for the problems of one or more
// manifests, for a named GPU architecture, with no GPU needed.
//
//   jitgemm-warmup --arch=sm_90a [--jobs=N] [--tuning=heuristic|fast|exhaustive] m.json...
//
// Compiles every kernel the heuristics would consider for each problem (the
// manifest's options, or --tuning, decide how many) into the cache named by
// JITGEMM_CACHE_DIR (see docs/cache.md). Prints progress (a bar on a
// terminal, plain lines otherwise) and a summary; exits 1 if anything failed.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/src/manifest.h"
#include "cache/disk_cache.h"
#include "jit/candidates.h"
#include "jit/driver_api.h"
#include "jit/family.h"
#include "jit/kernel_store.h"
#include "jit/launcher.h"
#include "jit/specializer.h"

ABSL_FLAG(std::string, arch, "",
          "Target architecture, e.g. sm_90a. Empty: the current GPU's (a GPU is then needed).");
ABSL_FLAG(int, jobs, 0, "Parallel compiles; 0: one per CPU core.");
ABSL_FLAG(std::string, tuning, "",
          "Override the manifests' tuning policy: heuristic (one kernel per problem), fast, "
          "exhaustive.");
ABSL_FLAG(bool, progress, true, "Show progress (a bar on a terminal, lines otherwise).");

namespace jitgemm {
namespace {

struct Task {
  std::string problem;
  jit::KernelSource source;
};

enum class Outcome { kCompiled, kCached, kFailed };

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Fills the jitgemm kernel cache for the problems of manifests.\n"
      "usage: jitgemm-warmup --arch=sm_90a [--jobs=N] manifest.json...");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() < 2) {
    std::fprintf(stderr, "jitgemm-warmup: no manifest given (see --help)\n");
    return 64;
  }
  std::string arch = absl::GetFlag(FLAGS_arch);
  jit::TargetInfo target;
  if (arch.empty()) {
    auto api = jit::GetDriver();
    if (!api.ok()) {
      std::fprintf(stderr, "jitgemm-warmup: --arch not given and no GPU to ask: %s\n",
                   std::string(api.status().message()).c_str());
      return 64;
    }
    auto dev = jit::CurrentDevice(**api);
    if (!dev.ok()) {
      std::fprintf(stderr, "jitgemm-warmup: %s\n", std::string(dev.status().message()).c_str());
      return 1;
    }
    arch = dev->arch;
    target = dev->target;
  } else {
    auto sm = jit::ParseArch(arch);
    if (!sm.ok()) {
      std::fprintf(stderr, "jitgemm-warmup: --%s\n", std::string(sm.status().message()).c_str());
      return 64;
    }
    target = jit::OfflineTarget(*sm);
  }

  std::vector<Task> tasks;
  int problems = 0, invalid = 0;
  for (size_t i = 1; i < args.size(); ++i) {
    std::ifstream in(args[i]);
    if (!in) {
      std::fprintf(stderr, "jitgemm-warmup: cannot read %s\n", args[i]);
      return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto manifest = ParseManifest(text.str());
    if (!manifest.ok()) {
      std::fprintf(stderr, "jitgemm-warmup: %s: %s\n", args[i],
                   std::string(manifest.status().message()).c_str());
      return 1;
    }
    Options options = manifest->options;
    const std::string tuning = absl::GetFlag(FLAGS_tuning);
    if (tuning == "heuristic") options.tuning = TuningPolicy::kHeuristic;
    if (tuning == "fast") options.tuning = TuningPolicy::kFast;
    if (tuning == "exhaustive") options.tuning = TuningPolicy::kExhaustive;
    for (const ManifestEntry& e : manifest->problems) {
      ++problems;
      if (absl::Status s = ValidateProblem(e.problem); !s.ok()) {
        std::fprintf(stderr, "jitgemm-warmup: %s: problem %s: %s\n", args[i], e.name.c_str(),
                     s.ToString().c_str());
        ++invalid;
        continue;
      }
      const GemmProblem p = Canonicalize(e.problem);
      if (options.backend == BackendPolicy::kCublasOnly) continue;
      for (const jit::KernelConfig& c : jit::ProposeConfigs(p, target, options)) {
        const jit::KernelFamily& f = jit::GetFamily(c.family);
        tasks.push_back({e.name.empty() ? DebugString(p) : e.name,
                         jit::Specialize(p, c, f, f.Shape(p, c, target), options.pointer_alignment)});
      }
    }
  }

  int jobs = absl::GetFlag(FLAGS_jobs);
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const bool tty = isatty(fileno(stdout));
  const bool progress = absl::GetFlag(FLAGS_progress);
  auto cache = cache::DiskCache::Default();
  std::printf("jitgemm-warmup: %d problems, %zu kernels for %s, %d jobs, cache %s\n", problems,
              tasks.size(), arch.c_str(), jobs, cache->root().c_str());
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
        bool compiled = false;
        jit::GetOptions get;
        get.compiled = &compiled;
        auto r = jit::KernelStore::Global().GetBinary(tasks[i].source, arch, get);
        outcomes[i] = !r.ok() ? Outcome::kFailed : compiled ? Outcome::kCompiled : Outcome::kCached;
        if (r.ok() && compiled) compile_ms[i] = (*r)->compile_ms;
        const size_t n = ++done;
        std::lock_guard<std::mutex> lock(print_mu);
        if (!r.ok()) {
          std::fprintf(stderr, "%sFAILED %s: %s\n", tty ? "\r\033[K" : "",
                       tasks[i].source.kernel_name.c_str(), r.status().ToString().c_str());
        }
        if (!progress) continue;
        if (tty) {
          const int width = 30, filled = static_cast<int>(width * n / tasks.size());
          std::printf("\r[%s%s] %zu/%zu %s", std::string(filled, '#').c_str(),
                      std::string(width - filled, '.').c_str(), n, tasks.size(),
                      tasks[i].source.kernel_name.c_str());
          std::printf("\033[K");
        } else {
          std::printf("[%zu/%zu] %s %s (%s)\n", n, tasks.size(),
                      outcomes[i] == Outcome::kCompiled ? "compiled"
                      : outcomes[i] == Outcome::kCached ? "cached  "
                                                        : "FAILED  ",
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
  std::vector<double> ms;
  for (double t : compile_ms) {
    if (t >= 0) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::printf(
      "\n| arch | problems | invalid | kernels | compiled | already cached | failed | time | "
      "compile ms median (min-max) |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  std::printf("| %s | %d | %d | %zu | %d | %d | %d | %.1f s | %s |\n", arch.c_str(), problems,
              invalid, tasks.size(), compiled, cached, failed, seconds,
              ms.empty() ? "-"
                         : absl::StrFormat("%.0f (%.0f-%.0f)", ms[ms.size() / 2], ms.front(),
                                           ms.back())
                               .c_str());
  const auto counters = cache->counters();
  std::printf("cache: %s (%s), %llu stores, %llu store failures\n", cache->root().c_str(),
              cache::CacheModeName(cache->mode()),
              static_cast<unsigned long long>(counters.stores),
              static_cast<unsigned long long>(counters.store_failures));
  return failed + invalid > 0 ? 1 : 0;
}

}  // namespace
}  // namespace jitgemm

int main(int argc, char** argv) { return jitgemm::Main(argc, argv); }
