// jitgemm-latency: how long a process takes from a ready CUDA context to the
// end of its first GEMM, per problem of a manifest. Run it twice against the
// same cache: the first run compiles (and tunes), the second shows what a
// deployed process with a warm cache pays.
//
//   jitgemm-latency [--tuning=fast] manifest.json
//
// Prints, per problem: Plan::Create time, first Run (launch + synchronise),
// whether anything was compiled, and the plan's choice.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "api/src/manifest.h"
#include "api/src/problem_internal.h"
#include "jitgemm/plan.h"

ABSL_FLAG(std::string, tuning, "", "Override the manifest's tuning policy.");

namespace {

double Ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::fprintf(stderr, "usage: jitgemm-latency [--tuning=...] manifest.json\n");
    return 64;
  }
  std::ifstream in(args[1]);
  std::stringstream text;
  text << in.rdbuf();
  auto manifest = jitgemm::ParseManifest(text.str());
  if (!manifest.ok()) {
    std::fprintf(stderr, "%s\n", manifest.status().ToString().c_str());
    return 1;
  }
  jitgemm::Options options = manifest->options;
  const std::string tuning = absl::GetFlag(FLAGS_tuning);
  if (tuning == "heuristic") options.tuning = jitgemm::TuningPolicy::kHeuristic;
  if (tuning == "fast") options.tuning = jitgemm::TuningPolicy::kFast;
  const auto ctx0 = std::chrono::steady_clock::now();
  if (cudaFree(nullptr) != cudaSuccess) {
    std::fprintf(stderr, "jitgemm-latency: no CUDA device\n");
    return 2;
  }
  std::printf("CUDA context: %.1f ms (not counted below)\n", Ms(ctx0, std::chrono::steady_clock::now()));
  std::printf("| problem | create ms | first run ms | total ms | compiled | choice |\n|---|---|---|---|---|---|\n");
  int failures = 0;
  for (const auto& e : manifest->problems) {
    const jitgemm::GemmProblem p = jitgemm::Canonicalize(e.problem);
    const int64_t batch = p.batch_count;
    void *a, *b, *c = nullptr, *d, *bias = nullptr;
    cudaMalloc(&a, jitgemm::OperandSpanBytes(p.a, p.m, p.k, batch));
    cudaMalloc(&b, jitgemm::OperandSpanBytes(p.b, p.k, p.n, batch));
    cudaMalloc(&d, jitgemm::OperandSpanBytes(p.d, p.m, p.n, batch));
    if (p.epilogue.beta != 0) cudaMalloc(&c, jitgemm::OperandSpanBytes(p.c, p.m, p.n, batch));
    if (p.epilogue.bias != jitgemm::BiasMode::kNone) cudaMalloc(&bias, 4 * (p.m + p.n) * batch);
    const auto t0 = std::chrono::steady_clock::now();
    auto plan = jitgemm::Plan::Create(e.problem, options);
    const auto t1 = std::chrono::steady_clock::now();
    absl::Status run = plan.ok() ? plan->Run({a, b, c, d, bias}, nullptr) : plan.status();
    const cudaError_t sync = cudaDeviceSynchronize();
    const auto t2 = std::chrono::steady_clock::now();
    if (!run.ok() || sync != cudaSuccess) {
      ++failures;
      std::printf("| %s | FAILED: %s %s |\n", e.name.c_str(), run.ToString().c_str(),
                  cudaGetErrorString(sync));
    } else {
      std::printf("| %s | %.2f | %.3f | %.2f | %s | %s %s |\n", e.name.c_str(), Ms(t0, t1),
                  Ms(t1, t2), Ms(t0, t2), plan->info().compiled ? "yes" : "no",
                  plan->info().backend.c_str(), plan->info().reason.substr(0, 40).c_str());
    }
    for (void* x : {a, b, c, d, bias}) cudaFree(x);
  }
  return failures > 0 ? 1 : 0;
}
