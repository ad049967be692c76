// Seed 001's grouped SwiGLU MLP as two jitgemm plans over the (B, G, D)
// layout, with no copies:
//
//   x (B, G, 1024) --gated plan--> h (B, G, 3072) --down plan--> y (B, G, 1024)
//   h[b, g] = silu(x[b, g] @ W_gate[g]) * (x[b, g] @ W_up[g])
//   y[b, g] = h[b, g] @ W_down[g]
//
// with W_gate, W_up (1024, 3072) and W_down (3072, 1024) per group, used as
// x @ W. The gated plan reads one B per group, [W_gate | W_up] side by side:
// a row-major 1024 x 6144 matrix (gate columns first), groups 1024 * 6144
// elements apart; it writes h once, never the two halves. Checked against a
// float64 host reference on sampled (b, g) rows; prints the plans, the time
// of the MLP (CUDA events over repeated runs) and the errors. Exit status:
// 0 when both errors are within bounds (or when there is no GPU to run on),
// 1 otherwise.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "jitgemm/plan.h"

namespace {

constexpr int64_t kRows = 2560, kGroups = 12, kModel = 1024, kHidden = 3072;
constexpr int kSamples = 24;  // (b, g) rows checked against float64
constexpr int kTimedRuns = 20;

uint16_t ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
double FromBf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<uint16_t> RandomBf16(size_t count, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<uint16_t> v(count);
  for (auto& e : v) e = ToBf16(dist(rng));
  return v;
}

// Normwise relative error of `got` against `want`.
double RelativeError(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1e-300));
}

void* DeviceCopy(const std::vector<uint16_t>& host) {
  void* d = nullptr;
  if (cudaMalloc(&d, host.size() * 2) != cudaSuccess) return nullptr;
  cudaMemcpy(d, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
  return d;
}

}  // namespace

int main() {
  using jitgemm::DataType;
  using jitgemm::Layout;
  // The gated projection: per group, x (B, 1024) [W_gate | W_up] (1024 x 6144).
  jitgemm::GemmProblem up;
  up.m = kRows;
  up.n = kHidden;  // D's columns; B has 2 * kHidden
  up.k = kModel;
  up.batch_count = kGroups;
  up.a = {DataType::kBF16, Layout::kRowMajor, kGroups * kModel, kModel};
  up.b = {DataType::kBF16, Layout::kRowMajor, 2 * kHidden, kModel * 2 * kHidden};
  up.d = {DataType::kBF16, Layout::kRowMajor, kGroups * kHidden, kHidden};
  up.epilogue.gate = jitgemm::Gate::kHalves;
  up.epilogue.activation = jitgemm::Activation::kSilu;
  // The down projection: per group, h (B, 3072) W_down (3072 x 1024).
  jitgemm::GemmProblem down;
  down.m = kRows;
  down.n = kModel;
  down.k = kHidden;
  down.batch_count = kGroups;
  down.a = {DataType::kBF16, Layout::kRowMajor, kGroups * kHidden, kHidden};
  down.b = {DataType::kBF16, Layout::kRowMajor, kModel, kHidden * kModel};
  down.d = {DataType::kBF16, Layout::kRowMajor, kGroups * kModel, kModel};
  std::printf("gated: %s\ndown:  %s\n", jitgemm::DebugString(up).c_str(),
              jitgemm::DebugString(down).c_str());

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: nothing to run (the problems above are what it would plan)\n");
    return 0;
  }
  const jitgemm::Options options = jitgemm::Options::FromEnvironment();
  auto up_plan = jitgemm::Plan::Create(up, options);
  auto down_plan = jitgemm::Plan::Create(down, options);
  if (!up_plan.ok() || !down_plan.ok()) {
    std::printf("no plan: %s\n",
                (!up_plan.ok() ? up_plan.status() : down_plan.status()).ToString().c_str());
    return 1;
  }
  for (const auto* plan : {&*up_plan, &*down_plan}) {
    std::printf("plan: %s %s\n  %s\n", plan->info().backend.c_str(),
                plan->info().kernel_name.c_str(), plan->info().reason.c_str());
  }

  // Weights scaled as nn.Linear initialises them (1 / sqrt(fan_in)), so that
  // activations stay O(1) through both projections.
  const std::vector<uint16_t> x = RandomBf16(kRows * kGroups * kModel, 1.f, 1);
  const std::vector<uint16_t> w_gate_up =
      RandomBf16(static_cast<size_t>(kGroups) * kModel * 2 * kHidden,
                 1.f / std::sqrt(static_cast<float>(kModel)), 2);
  const std::vector<uint16_t> w_down = RandomBf16(static_cast<size_t>(kGroups) * kHidden * kModel,
                                                  1.f / std::sqrt(static_cast<float>(kHidden)), 3);
  void* dx = DeviceCopy(x);
  void* dw = DeviceCopy(w_gate_up);
  void* dwd = DeviceCopy(w_down);
  void *dh = nullptr, *dy = nullptr;
  cudaMalloc(&dh, kRows * kGroups * kHidden * 2);
  cudaMalloc(&dy, kRows * kGroups * kModel * 2);
  if (dx == nullptr || dw == nullptr || dwd == nullptr || dh == nullptr || dy == nullptr) {
    std::printf("cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(dh, 0xff, kRows * kGroups * kHidden * 2);  // NaN: unwritten elements show
  cudaMemset(dy, 0xff, kRows * kGroups * kModel * 2);

  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  auto mlp = [&]() -> absl::Status {
    absl::Status s = up_plan->Run({.a = dx, .b = dw, .d = dh}, stream);
    if (!s.ok()) return s;
    return down_plan->Run({.a = dh, .b = dwd, .d = dy}, stream);
  };
  absl::Status s = mlp();
  if (!s.ok() || cudaStreamSynchronize(stream) != cudaSuccess) {
    std::printf("run failed: %s %s\n", s.ToString().c_str(),
                cudaGetErrorString(cudaGetLastError()));
    return 1;
  }

  // Check before timing: sampled rows of h and y against float64.
  std::vector<uint16_t> h(kRows * kGroups * kHidden), y(kRows * kGroups * kModel);
  cudaMemcpy(h.data(), dh, h.size() * 2, cudaMemcpyDeviceToHost);
  cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost);
  std::mt19937 pick(4);
  std::vector<double> h_got, h_want, y_got, y_want;
  for (int t = 0; t < kSamples; ++t) {
    const int64_t b = t == 0 ? kRows - 1 : pick() % kRows;
    const int64_t g = t == 0 ? kGroups - 1 : pick() % kGroups;
    const uint16_t* xr = &x[(b * kGroups + g) * kModel];
    const uint16_t* w = &w_gate_up[static_cast<size_t>(g) * kModel * 2 * kHidden];
    std::vector<double> gate(kHidden, 0.0), lin(kHidden, 0.0), hidden(kHidden);
    for (int64_t i = 0; i < kModel; ++i) {
      const double xi = FromBf16(xr[i]);
      const uint16_t* wr = &w[i * 2 * kHidden];
      for (int64_t j = 0; j < kHidden; ++j) {
        gate[j] += xi * FromBf16(wr[j]);
        lin[j] += xi * FromBf16(wr[kHidden + j]);
      }
    }
    for (int64_t j = 0; j < kHidden; ++j) {
      hidden[j] = gate[j] / (1.0 + std::exp(-gate[j])) * lin[j];
      h_want.push_back(hidden[j]);
      h_got.push_back(FromBf16(h[(b * kGroups + g) * kHidden + j]));
    }
    // y from the float64 hidden row: the whole MLP end to end.
    const uint16_t* wd = &w_down[static_cast<size_t>(g) * kHidden * kModel];
    std::vector<double> out(kModel, 0.0);
    for (int64_t j = 0; j < kHidden; ++j) {
      for (int64_t o = 0; o < kModel; ++o) out[o] += hidden[j] * FromBf16(wd[j * kModel + o]);
    }
    for (int64_t o = 0; o < kModel; ++o) {
      y_want.push_back(out[o]);
      y_got.push_back(FromBf16(y[(b * kGroups + g) * kModel + o]));
    }
  }
  const double h_err = RelativeError(h_got, h_want), y_err = RelativeError(y_got, y_want);
  double y_max = 0;
  for (size_t i = 0; i < y_got.size(); ++i) {
    y_max = std::max(y_max, std::abs(y_got[i] - y_want[i]));
  }

  // Time the MLP: both plans back to back on one stream.
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < 3; ++i) (void)mlp();
  cudaEventRecord(start, stream);
  for (int i = 0; i < kTimedRuns; ++i) (void)mlp();
  cudaEventRecord(stop, stream);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  std::printf("grouped MLP %lldx%lldx%lld -> %lld -> %lld bf16: %.1f us per MLP (%d runs)\n",
              static_cast<long long>(kRows), static_cast<long long>(kGroups),
              static_cast<long long>(kModel), static_cast<long long>(kHidden),
              static_cast<long long>(kModel), 1000.0 * ms / kTimedRuns, kTimedRuns);
  std::printf(
      "%d sampled (b, g) rows vs float64: h relative error %.2e, y relative error %.2e "
      "(max abs %.2e)\n",
      kSamples, h_err, y_err, y_max);

  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  for (void* p : {dx, dw, dwd, dh, dy}) cudaFree(p);
  const bool ok = h_err < 1e-2 && y_err < 2e-2;
  if (!ok) std::printf("MISMATCH\n");
  return ok ? 0 : 1;
}
