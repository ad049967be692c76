#include "tools/bench/mlp_reference.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "jitgemm/problem.h"
#include "tools/bench/cuda_util.h"
#include "tools/bench/host_data.h"
#include "tools/bench/mlp.h"

namespace jitgemm::bench::mlp {
namespace {

void ReferenceSample(const MlpShape& s, const MlpData& d, Sample* sample) {
  const int64_t K = s.model, H = s.hidden, G = s.groups, g = sample->group;
  const float* x = &d.x.values[(sample->row * G + g) * K];
  std::vector<double> gate(H, 0.0), up(H, 0.0);
  if (Grouped(s)) {  // W[g] is K x H row-major
    for (int64_t kk = 0; kk < K; ++kk) {
      const float* wg = &d.w_gate.values[(g * K + kk) * H];
      const float* wu = &d.w_up.values[(g * K + kk) * H];
      for (int64_t j = 0; j < H; ++j) {
        gate[j] += double{x[kk]} * wg[j];
        up[j] += double{x[kk]} * wu[j];
      }
    }
  } else {  // W is (H, K) row-major
    for (int64_t j = 0; j < H; ++j) {
      const float* wg = &d.w_gate.values[j * K];
      const float* wu = &d.w_up.values[j * K];
      double a = 0, b = 0;
      for (int64_t kk = 0; kk < K; ++kk) {
        a += double{x[kk]} * wg[kk];
        b += double{x[kk]} * wu[kk];
      }
      gate[j] = a;
      up[j] = b;
    }
  }
  const double alpha_up = MlpGatedProblem(s).epilogue.alpha;
  const double alpha_down = MlpDownProblem(s).epilogue.alpha;
  sample->hidden.resize(H);
  for (int64_t j = 0; j < H; ++j) {
    const double gv = alpha_up * gate[j], uv = alpha_up * up[j];
    sample->hidden[j] = gv / (1.0 + std::exp(-gv)) * uv;
  }
  sample->out.assign(K, 0.0);
  if (Grouped(s)) {  // W_down[g] is H x K row-major
    for (int64_t j = 0; j < H; ++j) {
      const float* wd = &d.w_down.values[(g * H + j) * K];
      for (int64_t o = 0; o < K; ++o) sample->out[o] += sample->hidden[j] * wd[o];
    }
  } else {  // W_down is (K, H) row-major
    for (int64_t o = 0; o < K; ++o) {
      const float* wd = &d.w_down.values[o * H];
      double acc = 0;
      for (int64_t j = 0; j < H; ++j) acc += sample->hidden[j] * wd[j];
      sample->out[o] = acc;
    }
  }
  for (double& v : sample->out) v *= alpha_down;
}

}  // namespace

std::vector<unsigned char> GateUpBytes(const MlpShape& s, const MlpData& d) {
  const size_t half = d.w_gate.bytes.size();
  std::vector<unsigned char> out(2 * half);
  if (!Grouped(s)) {
    std::memcpy(out.data(), d.w_gate.bytes.data(), half);
    std::memcpy(out.data() + half, d.w_up.bytes.data(), half);
    return out;
  }
  const size_t row = static_cast<size_t>(s.hidden) * 2;  // bytes of one half's row
  for (int64_t r = 0; r < s.groups * s.model; ++r) {
    std::memcpy(out.data() + r * 2 * row, d.w_gate.bytes.data() + r * row, row);
    std::memcpy(out.data() + r * 2 * row + row, d.w_up.bytes.data() + r * row, row);
  }
  return out;
}

std::vector<Sample> ReferenceSamples(const MlpShape& s, const MlpData& d) {
  std::vector<Sample> samples;
  if (Grouped(s)) {
    uint64_t state = 12345;
    for (int i = 0; i < kMaxSamples; ++i) {
      Sample x;
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      x.row = i == 0 ? s.rows - 1 : static_cast<int64_t>((state >> 33) % s.rows);
      x.group = i == 0 ? s.groups - 1 : static_cast<int64_t>((state >> 13) % s.groups);
      samples.push_back(std::move(x));
    }
  } else {
    const int64_t n = std::min<int64_t>(s.rows, kMaxSamples);
    for (int64_t i = 0; i < n; ++i) {
      Sample x;
      x.row = n == s.rows ? i : (i * (s.rows - 1)) / (n - 1);
      samples.push_back(std::move(x));
    }
  }
  std::vector<std::thread> threads;
  const size_t workers = std::max(1u, std::thread::hardware_concurrency());
  for (size_t t = 0; t < workers; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < samples.size(); i += workers) ReferenceSample(s, d, &samples[i]);
    });
  }
  for (auto& t : threads) t.join();
  return samples;
}

absl::StatusOr<Check> CheckOutputs(const MlpShape& s, const std::vector<Sample>& samples,
                                   const void* h, const void* y) {
  double hn = 0, hd = 0, yn = 0, yd = 0;
  const int64_t H = s.hidden, K = s.model;
  std::vector<uint16_t> hrow(H), yrow(K);
  for (const Sample& x : samples) {
    const int64_t at = x.row * s.groups + x.group;
    BENCH_CUDA(cudaMemcpy(hrow.data(), static_cast<const uint16_t*>(h) + at * H, H * 2,
                          cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(yrow.data(), static_cast<const uint16_t*>(y) + at * K, K * 2,
                          cudaMemcpyDeviceToHost));
    const std::vector<float> hv = DecodeElements(DataType::kBF16, hrow.data(), H);
    const std::vector<float> yv = DecodeElements(DataType::kBF16, yrow.data(), K);
    for (int64_t j = 0; j < H; ++j) {
      if (!std::isfinite(hv[j])) return Check{INFINITY, INFINITY};
      hn += (hv[j] - x.hidden[j]) * (hv[j] - x.hidden[j]);
      hd += x.hidden[j] * x.hidden[j];
    }
    for (int64_t o = 0; o < K; ++o) {
      if (!std::isfinite(yv[o])) return Check{INFINITY, INFINITY};
      yn += (yv[o] - x.out[o]) * (yv[o] - x.out[o]);
      yd += x.out[o] * x.out[o];
    }
  }
  return Check{std::sqrt(hn / std::max(hd, 1e-300)), std::sqrt(yn / std::max(yd, 1e-300))};
}

}  // namespace jitgemm::bench::mlp
