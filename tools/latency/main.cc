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
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "api/src/manifest.h"
#include "api/src/manifest_kernels.h"
#include "core/problem_signature.h"
#include "jitgemm/plan.h"

ABSL_FLAG(std::string, tuning, "", "Override the manifest's tuning policy.");
ABSL_FLAG(bool, verify, false,
          "Fill inputs with random values and check every output against a float64 host "
          "reference (problems up to 2^28 multiply-adds; larger ones are marked unchecked).");

namespace {

double Ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

float Load(jitgemm::DataType t, const std::vector<uint8_t>& buf, int64_t i) {
  if (t == jitgemm::DataType::kF32) {
    float f;
    std::memcpy(&f, buf.data() + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, buf.data() + 2 * i, 2);
  uint32_t u;
  if (t == jitgemm::DataType::kBF16) {
    u = static_cast<uint32_t>(h) << 16;
  } else {  // fp16, normal numbers and zero only (the fill below makes no others)
    const uint32_t exp = (h >> 10) & 0x1f;
    u = ((h & 0x8000u) << 16) | (exp == 0 ? 0 : ((exp + 112) << 23) | ((h & 0x3ffu) << 13));
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Random values in [-1, 1] with 6 significant bits: exact in every type.
void Fill(jitgemm::DataType t, std::vector<uint8_t>* buf, std::mt19937* rng) {
  const int size = jitgemm::DataTypeSize(t);
  for (size_t i = 0; i + size <= buf->size(); i += size) {
    const float f = static_cast<float>(static_cast<int>((*rng)() % 129) - 64) / 64.0f;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (t == jitgemm::DataType::kF32) {
      std::memcpy(buf->data() + i, &f, 4);
    } else if (t == jitgemm::DataType::kBF16) {
      const uint16_t h = static_cast<uint16_t>(u >> 16);
      std::memcpy(buf->data() + i, &h, 2);
    } else {
      const uint32_t exp = (u >> 23) & 0xff;
      const uint16_t h = f == 0 ? 0
                                : static_cast<uint16_t>(((u >> 16) & 0x8000u) |
                                                        ((exp - 112) << 10) | ((u >> 13) & 0x3ffu));
      std::memcpy(buf->data() + i, &h, 2);
    }
  }
}

int64_t Index(const jitgemm::Operand& op, int64_t r, int64_t c, int64_t b) {
  const int64_t stride = op.batch_stride < 0 ? 0 : op.batch_stride;
  return b * stride + (op.layout == jitgemm::Layout::kRowMajor ? r * op.ld + c : c * op.ld + r);
}

double Activate(jitgemm::Activation a, double x) {
  switch (a) {
    case jitgemm::Activation::kRelu:
      return x > 0 ? x : 0;
    case jitgemm::Activation::kGeluTanh:
      return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case jitgemm::Activation::kGeluErf:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case jitgemm::Activation::kSilu:
      return x / (1 + std::exp(-x));
    default:
      return x;
  }
}

// Relative Frobenius error of D against a float64 reference.
double Verify(const jitgemm::GemmProblem& p, const std::vector<uint8_t>& a,
              const std::vector<uint8_t>& b, const std::vector<uint8_t>& c,
              const std::vector<uint8_t>& bias, const std::vector<uint8_t>& d) {
  double num = 0, den = 0;
  for (int64_t bb = 0; bb < p.batch_count; ++bb) {
    for (int64_t i = 0; i < p.m; ++i) {
      // alpha * (A B)[i, j] + beta * C + bias, for column j of B (of 2N when gated).
      auto column = [&](int64_t j) {
        double acc = 0;
        for (int64_t k = 0; k < p.k; ++k) {
          acc += static_cast<double>(Load(p.a.type, a, Index(p.a, i, k, bb))) *
                 Load(p.b.type, b, Index(p.b, k, j, bb));
        }
        double v = p.epilogue.alpha * acc;
        if (p.epilogue.beta != 0) v += p.epilogue.beta * Load(p.c.type, c, Index(p.c, i, j, bb));
        if (p.epilogue.bias != jitgemm::BiasMode::kNone) {
          v += Load(p.d.type, bias,
                    (p.epilogue.bias == jitgemm::BiasMode::kPerColumn ? j : i) +
                        bb * p.epilogue.bias_batch_stride);
        }
        return v;
      };
      for (int64_t j = 0; j < p.n; ++j) {
        double v = Activate(p.epilogue.activation, column(j));
        if (p.epilogue.gate == jitgemm::Gate::kHalves) v *= column(p.n + j);  // act(gate) * up
        const double got = Load(p.d.type, d, Index(p.d, i, j, bb));
        if (!std::isfinite(got)) return INFINITY;
        num += (got - v) * (got - v);
        den += v * v;
      }
    }
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
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
  jitgemm::Options options = manifest->options;
  const std::string tuning = absl::GetFlag(FLAGS_tuning);
  if (tuning == "heuristic") options.tuning = jitgemm::TuningPolicy::kHeuristic;
  if (tuning == "fast") options.tuning = jitgemm::TuningPolicy::kFast;
  const auto ctx0 = std::chrono::steady_clock::now();
  if (cudaFree(nullptr) != cudaSuccess) {
    std::fprintf(stderr, "jitgemm-latency: no CUDA device\n");
    return 2;
  }
  std::printf("CUDA context: %.1f ms (not counted below)\n",
              Ms(ctx0, std::chrono::steady_clock::now()));
  const bool verify = absl::GetFlag(FLAGS_verify);
  std::printf(
      "| problem | create ms | first run ms | total ms | compiled | error | choice |\n"
      "|---|---|---|---|---|---|---|\n");
  int failures = 0;
  std::mt19937 rng(7);
  for (const auto& e : manifest->problems) {
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
        const double err = Verify(p, ha, hb, hc, hbias, hd);
        const double tol = p.d.type == jitgemm::DataType::kBF16  ? 1.6e-2
                           : p.d.type == jitgemm::DataType::kF16 ? 4e-3
                                                                 : 1e-4;
        error = std::to_string(err).substr(0, 8);
        if (!(err <= tol)) {
          ++failures;
          error += " WRONG";
        }
      }
      std::printf("| %s | %.2f | %.3f | %.2f | %s | %s | %s %s |\n", e.name.c_str(), Ms(t0, t1),
                  Ms(t1, t2), Ms(t0, t2), plan->info().compiled ? "yes" : "no", error.c_str(),
                  plan->info().backend.c_str(), plan->info().reason.substr(0, 40).c_str());
    }
    for (void* x : {a, b, c, d, bias}) cudaFree(x);
  }
  std::printf("NVRTC compiles in this process: %llu\n",
              static_cast<unsigned long long>(jitgemm::tools::KernelStoreCounters().compiles));
  std::printf("NVRTC opened in this process: %s\n", jitgemm::tools::NvrtcOpened() ? "yes" : "no");
  return failures > 0 ? 1 : 0;
}
