// jitgemm-bench: the BENCHMARKS.md suites, jitgemm against cuBLAS side by
// side in one process on one GPU.
//
//   jitgemm-bench --suite=S1,S2,S6 --csv=results.csv
//   jitgemm-bench --suite=S2 --filter="f16 1024" --repeats=9
//   jitgemm-bench --suite=mlp                 # SwiGLU MLP blocks vs cuBLAS (issue 16)
//   jitgemm-bench --list                      # the selected cases; no GPU needed
//   jitgemm-bench --manifest=recorded.json    # your own problems (JITGEMM_RECORD)
//
// Per case: random inputs (never zeros), a float64 CPU reference, and per
// column a check of the NaN-poisoned output (relative Frobenius error; a
// wrong column is marked FAIL and never timed), then CUDA events around a
// graph of --launches calls per column; the columns of a case are replayed in
// turn, --repeats rounds, in balanced orders (every column takes every place
// and follows every other column equally often, so drift, the place in the
// order and the load just before spread over all of them); the median per
// call is reported. Weights rotate over distinct buffers where the workload
// streams them (S1: 100). Exit status: 0 all columns correct and measured, 1
// any failure or error, 2 no CUDA device, 64 bad flags.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/option_names.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"
#include "tools/bench/chain.h"
#include "tools/bench/lt_baseline.h"
#include "tools/bench/manifest_cases.h"
#include "tools/bench/mlp.h"
#include "tools/bench/report.h"
#include "tools/bench/runner.h"
#include "tools/bench/suites.h"

ABSL_FLAG(std::string, suite, "S1,S2,S6",
          "comma-separated suites: S1, S2, S3, S6, regimes (issue 20's two rows), chain (8 "
          "dependent small-M linears, PDL off vs on vs constant_b), mlp (SwiGLU MLP blocks: seed "
          "001's grouped MLP and a dense 4096-14336-4096 block, jitgemm gated + down plans vs "
          "cuBLAS GEMMs + silu*mul); with --manifest, only the suites given explicitly");
ABSL_FLAG(std::string, manifest, "",
          "manifest file(s) (docs/manifest.md, e.g. written with JITGEMM_RECORD), comma-separated "
          "or the flag repeated: every problem against cublas_mm (and addmm_act, lt_bias_act "
          "where it has a bias or activation) with jit and auto planned with the manifest's "
          "options");
ABSL_FLAG(int, repeats, 5, "timed graph replays per figure; the median is reported");
ABSL_FLAG(int, launches, 100, "calls captured into each timed CUDA graph");
ABSL_FLAG(std::string, csv, "", "also write the results to this CSV file");
ABSL_FLAG(std::string, filter, "",
          "only cases whose \"suite label\" (e.g. \"S2 f16 1024x1024x1024\") contains one of "
          "these comma-separated substrings");
ABSL_FLAG(std::string, impls, "",
          "only these columns, comma-separated: cublas_mm, cublas_loop, addmm_act (Lt BIAS + "
          "activation kernel), lt_bias_act (Lt RELU_BIAS / GELU_BIAS), jit, auto (default: "
          "all)");
ABSL_FLAG(int, rotate, 0,
          "weight buffers to rotate through in every case (0: the suite's choice, 100 for S1, "
          "1 otherwise)");
ABSL_FLAG(bool, regimes, true,
          "also time cublas_mm and auto in both regimes: streaming (B rotated over copies "
          "exceeding twice the L2) and resident (the same B every call); two more columns");
ABSL_FLAG(std::string, tuning, "",
          "TuningPolicy of the jitgemm plans: heuristic, fast or exhaustive (default: "
          "JITGEMM_TUNING, else fast as in jitgemm::Options; a manifest's own for its "
          "problems)");
ABSL_FLAG(int, device, 0, "CUDA device ordinal");
ABSL_FLAG(int, reference_threads, 0, "CPU threads for the float64 reference (0: all cores)");
ABSL_FLAG(bool, list, false, "print the selected cases and exit (needs no GPU)");

namespace jitgemm::bench {
namespace {

constexpr int kExitFailure = 1;
constexpr int kExitNoDevice = 2;
constexpr int kExitUsage = 64;

bool Selected(const BenchCase& c, const std::vector<std::string>& filters) {
  if (filters.empty()) return true;
  const std::string name = c.suite + " " + c.label;
  for (const std::string& f : filters) {
    if (name.find(f) != std::string::npos) return true;
  }
  return false;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "jitgemm-bench: BENCHMARKS.md suites, jitgemm vs cuBLAS.\n"
      "  jitgemm-bench --suite=S1,S2,S6 [--filter=...] [--csv=out.csv] [--repeats=5]\n"
      "  jitgemm-bench --manifest=recorded.json[,more.json] [--manifest=...]");
  absl::ParseCommandLine(argc, argv);
  const std::vector<std::string> manifests = ManifestFlagValues(argc, argv);

  std::vector<BenchCase> cases;
  std::vector<std::string> filters;
  for (absl::string_view f : absl::StrSplit(absl::GetFlag(FLAGS_filter), ',', absl::SkipEmpty())) {
    filters.emplace_back(f);
  }
  bool chain = false;
  bool mlp = false;  // the MLP suite (tools/bench/mlp.h) runs after the tables
  // With --manifest, the default suites run only when --suite names them.
  const std::string suites =
      manifests.empty() || FlagGiven(argc, argv, "suite") ? absl::GetFlag(FLAGS_suite) : "";
  for (absl::string_view s : absl::StrSplit(suites, ',', absl::SkipEmpty())) {
    if (absl::StripAsciiWhitespace(s) == "chain") {
      chain = true;
      continue;
    }
    if (absl::StripAsciiWhitespace(s) == "mlp") {
      mlp = true;
      continue;
    }
    absl::StatusOr<std::vector<BenchCase>> suite =
        MakeSuite(std::string(absl::StripAsciiWhitespace(s)));
    if (!suite.ok()) {
      std::fprintf(stderr, "jitgemm-bench: --suite: %s\n",
                   std::string(suite.status().message()).c_str());
      return kExitUsage;
    }
    for (BenchCase& c : *suite) {
      if (Selected(c, filters)) cases.push_back(std::move(c));
    }
  }
  for (const std::string& path : manifests) {
    absl::StatusOr<std::vector<BenchCase>> from = ManifestFileCases(path);
    if (!from.ok()) {
      std::fprintf(stderr, "jitgemm-bench: --manifest: %s\n", from.status().ToString().c_str());
      return kExitUsage;
    }
    for (BenchCase& c : *from) {
      if (Selected(c, filters)) cases.push_back(std::move(c));
    }
  }

  RunConfig config;
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_impls), ',', absl::SkipEmpty())) {
    const std::optional<Impl> impl = ImplFromName(std::string(name));
    if (impl.has_value()) {
      config.impls.push_back(*impl);
    } else {
      std::fprintf(stderr, "jitgemm-bench: --impls: unknown column '%s'\n",
                   std::string(name).c_str());
      return kExitUsage;
    }
  }
  config.timing.launches = absl::GetFlag(FLAGS_launches);
  config.timing.replays = absl::GetFlag(FLAGS_repeats);
  config.rotate = absl::GetFlag(FLAGS_rotate);
  config.regimes = absl::GetFlag(FLAGS_regimes);
  config.reference_threads = absl::GetFlag(FLAGS_reference_threads);
  if (config.timing.launches < 1 || config.timing.replays < 1 || config.rotate < 0) {
    std::fprintf(stderr, "jitgemm-bench: --launches and --repeats must be >= 1, --rotate >= 0\n");
    return kExitUsage;
  }
  config.plan_options = Options::FromEnvironment();
  const std::string tuning = absl::AsciiStrToLower(absl::GetFlag(FLAGS_tuning));
  if (!tuning.empty()) config.tuning = ParseTuningPolicy(tuning);
  if (!tuning.empty() && !config.tuning.has_value()) {
    std::fprintf(stderr, "jitgemm-bench: --tuning: '%s' is not heuristic, fast or exhaustive\n",
                 tuning.c_str());
    return kExitUsage;
  }

  if (absl::GetFlag(FLAGS_list)) {
    for (const BenchCase& c : cases) {
      std::vector<std::string> impls;
      for (Impl i : c.impls) impls.push_back(ImplName(i));
      std::printf("%s  %-28s rotate=%-3d %s\n", c.suite.c_str(), c.label.c_str(), c.rotate,
                  absl::StrJoin(impls, ",").c_str());
    }
    if (chain)
      std::printf(
          "chain  M=1,8,16 N=K=2048,4096 bf16, 8 layers  cublas,jit pdl off/on/constant_b\n");
    if (mlp) {
      for (const MlpShape& s : MlpShapes()) {
        std::string valid;
        for (const GemmProblem& p : {MlpGatedProblem(s), MlpHalfProblem(s), MlpDownProblem(s)}) {
          if (const absl::Status v = ValidateProblem(p); !v.ok() && valid.empty()) {
            valid = " INVALID: " + std::string(v.message());
          }
        }
        std::printf("mlp  %-40s gated %s; cublas(gate,up,silu*mul,down),jitgemm(gated,down)%s\n",
                    s.label.c_str(), DebugString(MlpGatedProblem(s)).c_str(), valid.c_str());
      }
    }
    return 0;
  }
  if (cases.empty() && !chain && !mlp) {
    std::fprintf(stderr, "jitgemm-bench: no case matches --suite/--filter\n");
    return kExitUsage;
  }

  int device_count = 0;
  const cudaError_t count_err = cudaGetDeviceCount(&device_count);
  if (count_err != cudaSuccess || device_count == 0) {
    std::fprintf(
        stderr,
        "jitgemm-bench: no CUDA device (%s); nothing to measure. The benchmark needs a "
        "GPU and its driver.\n",
        count_err != cudaSuccess ? cudaGetErrorString(count_err) : "cudaGetDeviceCount returned 0");
    return kExitNoDevice;
  }
  const int device = absl::GetFlag(FLAGS_device);
  if (device < 0 || device >= device_count) {
    std::fprintf(stderr, "jitgemm-bench: --device=%d, but there are %d devices\n", device,
                 device_count);
    return kExitUsage;
  }
  absl::StatusOr<std::unique_ptr<BenchContext>> ctx = BenchContext::Create(device);
  if (!ctx.ok()) {
    std::fprintf(stderr, "jitgemm-bench: %s\n", ctx.status().ToString().c_str());
    return kExitFailure;
  }

  cudaDeviceProp prop = {};
  cudaGetDeviceProperties(&prop, device);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf("# jitgemm-bench\n\n");
  std::printf(
      "device %d: %s, sm_%d%d, %d SMs, %.0f MiB L2; driver %d.%d, runtime %d.%d, "
      "cuBLASLt %s\n",
      device, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
      prop.l2CacheSize / 1048576.0, driver / 1000, (driver % 1000) / 10, runtime / 1000,
      (runtime % 1000) / 10, CublasLtVersionString().c_str());
  std::printf(
      "method: CUDA graph of %d calls, median of %d replays (columns in turn, in balanced "
      "orders); float64 reference check "
      "before timing; speedup = baseline µs / column µs\n",
      config.timing.launches, config.timing.replays);
  std::printf("command:");
  for (int i = 0; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\n");
  std::fflush(stdout);

  std::vector<CaseResult> results;
  for (const BenchCase& c : cases) {
    results.push_back(RunCase(c, config, **ctx));
    if (results.back().fatal) {
      std::fprintf(stderr, "jitgemm-bench: stopping after a fatal CUDA error\n");
      break;
    }
  }

  if (!cases.empty()) PrintTables(results, stdout);
  std::fflush(stdout);
  int exit_code = 0;
  if (chain) {
    const absl::Status s = RunChainSuite(**ctx, config.timing, config.plan_options, stdout);
    if (!s.ok()) {
      std::fprintf(stderr, "jitgemm-bench: chain: %s\n", s.ToString().c_str());
      exit_code = kExitFailure;
    }
  }
  if (mlp) {
    Options options = config.plan_options;
    if (config.tuning.has_value()) options.tuning = *config.tuning;
    const absl::Status s = RunMlpSuite(**ctx, config.timing, options, filters, stdout);
    if (!s.ok()) {
      std::fprintf(stderr, "jitgemm-bench: mlp: %s\n", s.ToString().c_str());
      exit_code = kExitFailure;
    }
  }
  for (const CaseResult& r : results) {
    if (!r.status.ok() || r.fatal) exit_code = kExitFailure;
    for (const CellResult& cell : r.cells) {
      if (IsFailure(cell)) exit_code = kExitFailure;
    }
  }
  if (results.size() < cases.size()) exit_code = kExitFailure;
  const std::string csv = absl::GetFlag(FLAGS_csv);
  if (!csv.empty()) {
    const absl::Status s = WriteCsv(results, csv);
    if (!s.ok()) {
      std::fprintf(stderr, "jitgemm-bench: %s\n", s.ToString().c_str());
      exit_code = kExitFailure;
    } else {
      std::fprintf(stderr, "jitgemm-bench: wrote %s\n", csv.c_str());
    }
  }
  if (exit_code != 0) {
    std::fprintf(stderr, "jitgemm-bench: some columns failed or could not run (see above)\n");
  }
  return exit_code;
}

}  // namespace
}  // namespace jitgemm::bench

int main(int argc, char** argv) { return jitgemm::bench::Main(argc, argv); }
