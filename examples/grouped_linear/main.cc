// Seed 001's grouped linear: x (B, G, Din) -> y (B, G, Dout) with one weight
// per group, as ONE batched jitgemm problem that reads x and writes y in
// place: no split, no stack, no copies. Runs on a GPU and checks a few
// outputs against the host; without a GPU it prints the problem and exits.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "jitgemm/plan.h"

namespace {

uint16_t ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
float FromBf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

int main() {
  const int64_t B = 256, G = 12, Din = 1024, Dout = 3072;
  jitgemm::GemmProblem p;
  p.m = B;  // rows of one group's x: the batch
  p.n = Dout;
  p.k = Din;
  p.batch_count = G;  // one GEMM per group
  // x[b][g][:] starts at (b * G + g) * Din: rows G * Din apart, groups Din apart.
  p.a = {jitgemm::DataType::kBF16, jitgemm::Layout::kRowMajor, G * Din, Din};
  // W[g] is (Dout, Din) row-major, i.e. B = W^T column-major with ld Din.
  p.b = {jitgemm::DataType::kBF16, jitgemm::Layout::kColMajor, Din, Din * Dout};
  // y[b][g][:] starts at (b * G + g) * Dout.
  p.d = {jitgemm::DataType::kBF16, jitgemm::Layout::kRowMajor, G * Dout, Dout};
  std::printf("problem: %s\n", jitgemm::DebugString(p).c_str());

  auto plan = jitgemm::Plan::Create(p);
  if (!plan.ok()) {
    std::printf("no plan here: %s\n", plan.status().ToString().c_str());
    return 0;
  }
  std::printf("plan: %s %s\n  %s\n", plan->info().backend.c_str(), plan->info().kernel_name.c_str(),
              plan->info().reason.c_str());

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<uint16_t> x(B * G * Din), w(G * Dout * Din), y(B * G * Dout);
  for (auto& v : x) v = ToBf16(dist(rng));
  for (auto& v : w) v = ToBf16(dist(rng));
  void *dx, *dw, *dy;
  cudaMalloc(&dx, x.size() * 2);
  cudaMalloc(&dw, w.size() * 2);
  cudaMalloc(&dy, y.size() * 2);
  cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dw, w.data(), w.size() * 2, cudaMemcpyHostToDevice);
  absl::Status s = plan->Run({.a = dx, .b = dw, .d = dy}, nullptr);
  if (!s.ok() || cudaDeviceSynchronize() != cudaSuccess) {
    std::printf("run failed: %s\n", s.ToString().c_str());
    return 1;
  }
  cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost);
  // Spot-check a few outputs against the definition y[b,g,:] = x[b,g,:] W[g]^T.
  double worst = 0;
  for (int t = 0; t < 64; ++t) {
    const int64_t b = rng() % B, g = rng() % G, o = rng() % Dout;
    double want = 0;
    for (int64_t i = 0; i < Din; ++i) {
      want += static_cast<double>(FromBf16(x[(b * G + g) * Din + i])) *
              FromBf16(w[(g * Dout + o) * Din + i]);
    }
    const double got = FromBf16(y[(b * G + g) * Dout + o]);
    worst = std::max(worst, std::abs(got - want) / (1.0 + std::abs(want)));
  }
  std::printf("64 spot checks: worst relative error %.2e\n", worst);
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(dy);
  return worst < 2e-2 ? 0 : 1;
}
