// jitgemm-latency: how long a process takes from a ready CUDA context to the
// end of its first GEMM, per problem of a manifest. Run it twice against the
// same cache: the first run compiles (and tunes), the second shows what a
// deployed process with a warm cache pays.
//
//   jitgemm-latency [--tuning=fast] manifest.json
//
// Prints, per problem: Plan::Create time, first Run (launch + synchronise),
// the host time of a later Run (issue only, the GPU not waited for), whether
// anything was compiled, and the plan's choice.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "api/src/manifest.h"
#include "api/src/manifest_kernels.h"
#include "core/host_types.h"
#include "core/problem_signature.h"
#include "jitgemm/plan.h"
#include "support/reference.h"

ABSL_FLAG(std::string, tuning, "",
          "heuristic, fast or exhaustive: override every problem's tuning policy.");
ABSL_FLAG(bool, verify, false,
          "Fill inputs with random values and check every output against a float64 host "
          "reference (problems up to 2^28 multiply-adds; larger ones are marked unchecked).");

ABSL_FLAG(int, host_runs, 100,
          "Runs per timed loop for the `run host us` column (median of 5 loops, same "
          "pointers, the GPU waited for between loops only); 0 skips it.");

namespace {

double Ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Random values in [-1, 1] with 6 significant bits: exact in every type.
void Fill(jitgemm::DataType t, std::vector<uint8_t>* buf, std::mt19937* rng) {
  const int64_t count = static_cast<int64_t>(buf->size()) / jitgemm::DataTypeSize(t);
  for (int64_t i = 0; i < count; ++i) {
    const float f = static_cast<float>(static_cast<int>((*rng)() % 129) - 64) / 64.0f;
    jitgemm::StoreAs(t, buf->data(), i, f);
  }
}

// Median host µs to issue one Run: what an eager caller pays per call;
// nullopt when a run fails.
std::optional<double> RunHostUs(const jitgemm::Plan& plan, const jitgemm::GemmPointers& pointers,
                                int runs) {
  std::vector<double> loops;
  for (int loop = 0; loop < 5; ++loop) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < runs; ++i) {
      if (!plan.Run(pointers, nullptr).ok()) return std::nullopt;
    }
    const auto t1 = std::chrono::steady_clock::now();
    cudaDeviceSynchronize();
    loops.push_back(Ms(t0, t1) * 1000 / runs);
  }
  std::sort(loops.begin(), loops.end());
  return loops[loops.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::fprintf(stderr, "usage: jitgemm-latency [--tuning=...] manifest.json\n");
    return 64;
  }
  absl::StatusOr<std::string> text = jitgemm::ReadManifestFile(args[1]);
  if (!text.ok()) {
    std::fprintf(stderr, "%s\n", text.status().ToString().c_str());
    return 1;
  }
  auto manifest = jitgemm::ParseManifest(*text);
  if (!manifest.ok()) {
    std::fprintf(stderr, "%s\n", manifest.status().ToString().c_str());
    return 1;
  }
  const auto tuning = jitgemm::tools::ParseTuningOverride(absl::GetFlag(FLAGS_tuning));
  if (!tuning.ok()) {
    std::fprintf(stderr, "jitgemm-latency: %s\n", std::string(tuning.status().message()).c_str());
    return 1;
  }
  const auto ctx0 = std::chrono::steady_clock::now();
  if (cudaFree(nullptr) != cudaSuccess) {
    std::fprintf(stderr, "jitgemm-latency: no CUDA device\n");
    return 2;
  }
  std::printf("CUDA context: %.1f ms (not counted below)\n",
              Ms(ctx0, std::chrono::steady_clock::now()));
  const bool verify = absl::GetFlag(FLAGS_verify);
  std::printf(
      "| problem | create ms | first run ms | total ms | run host us | compiled | error | choice "
      "|\n"
      "|---|---|---|---|---|---|---|---|\n");
  int failures = 0;
  std::mt19937 rng(7);
  for (const auto& e : manifest->problems) {
    jitgemm::Options options = manifest->OptionsOf(e);
    if (tuning->has_value()) options.tuning = **tuning;
    const jitgemm::GemmProblem p = jitgemm::Canonicalize(e.problem);
    const int64_t batch = p.batch_count;
    void *a, *b, *c = nullptr, *d, *bias = nullptr;
    std::vector<uint8_t> ha(jitgemm::OperandSpanBytes(p.a, p.m, p.k, batch));
    std::vector<uint8_t> hb(jitgemm::OperandSpanBytes(p.b, p.k, jitgemm::BColumns(p), batch));
    std::vector<uint8_t> hd(jitgemm::OperandSpanBytes(p.d, p.m, p.n, batch));
    std::vector<uint8_t> hc(p.epilogue.beta != 0 ? jitgemm::OperandSpanBytes(p.c, p.m, p.n, batch)
                                                 : 0);
    std::vector<uint8_t> hbias(
        p.epilogue.bias != jitgemm::BiasMode::kNone ? 4 * (p.m + jitgemm::BColumns(p)) * batch : 0);
    const bool check = verify && p.m * p.n * p.k * batch <= (int64_t{1} << 28);
    if (check) {
      Fill(p.a.type, &ha, &rng);
      Fill(p.b.type, &hb, &rng);
      Fill(p.c.type, &hc, &rng);
      Fill(p.d.type, &hbias, &rng);
    }
    cudaMalloc(&a, ha.size());
    cudaMalloc(&b, hb.size());
    cudaMalloc(&d, hd.size());
    if (!hc.empty()) cudaMalloc(&c, hc.size());
    if (!hbias.empty()) cudaMalloc(&bias, hbias.size());
    if (check) {
      cudaMemcpy(a, ha.data(), ha.size(), cudaMemcpyHostToDevice);
      cudaMemcpy(b, hb.data(), hb.size(), cudaMemcpyHostToDevice);
      if (c) cudaMemcpy(c, hc.data(), hc.size(), cudaMemcpyHostToDevice);
      if (bias) cudaMemcpy(bias, hbias.data(), hbias.size(), cudaMemcpyHostToDevice);
      cudaMemset(d, 0xff, hd.size());  // NaN: an unwritten element fails
      cudaDeviceSynchronize();
    }
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
      std::string error = "unchecked";
      if (check) {
        cudaMemcpy(hd.data(), d, hd.size(), cudaMemcpyDeviceToHost);
        const double err = jitgemm::support::RelativeError(
            p, hd.data(),
            jitgemm::support::ReferenceGemm(p, ha.data(), hb.data(),
                                            hc.empty() ? nullptr : hc.data(),
                                            hbias.empty() ? nullptr : hbias.data()));
        const double tol = p.d.type == jitgemm::DataType::kBF16  ? 1.6e-2
                           : p.d.type == jitgemm::DataType::kF16 ? 4e-3
                                                                 : 1e-4;
        error = std::to_string(err).substr(0, 8);
        if (!(err <= tol)) {
          ++failures;
          error += " WRONG";
        }
      }
      const int host_runs = absl::GetFlag(FLAGS_host_runs);
      std::string host_us = "-";
      if (host_runs > 0) {
        const std::optional<double> us = RunHostUs(*plan, {a, b, c, d, bias}, host_runs);
        if (!us.has_value()) ++failures;
        host_us = us.has_value() ? absl::StrFormat("%.2f", *us) : "FAILED";
      }
      std::printf("| %s | %.2f | %.3f | %.2f | %s | %s | %s | %s %s |\n", e.name.c_str(),
                  Ms(t0, t1), Ms(t1, t2), Ms(t0, t2), host_us.c_str(),
                  plan->info().compiled ? "yes" : "no", error.c_str(), plan->info().backend.c_str(),
                  plan->info().reason.substr(0, 40).c_str());
    }
    for (void* x : {a, b, c, d, bias}) cudaFree(x);
  }
  std::printf("NVRTC compiles in this process: %llu\n",
              static_cast<unsigned long long>(jitgemm::tools::KernelStoreCounters().compiles));
  std::printf("NVRTC opened in this process: %s\n", jitgemm::tools::NvrtcOpened() ? "yes" : "no");
  return failures > 0 ? 1 : 0;
}
