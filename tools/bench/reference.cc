#include "tools/bench/reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "support/reference.h"
#include "tools/bench/host_data.h"

namespace jitgemm::bench {
namespace {

constexpr int64_t kTileRows = 32;
constexpr int64_t kTileCols = 512;
constexpr int64_t kDepth = 128;

// Four doubles; GCC and Clang lower it to AVX2 or to pairs of SSE2 registers.
typedef double Vec4
    __attribute__((vector_size(32)));  // k per pass: a 128 x 512 block of B (512 KiB) stays in L2

// c[i0..i1) x [j0..j1) += a (row-major m x k) * b (row-major k x n), all
// float64. The body keeps a 4 x 8 block of c in registers over a k block.
// Not under TSan: the clones' resolver runs while the loader relocates, before
// the TSan runtime is up, and its instrumented body crashes there.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void MultiplyTile(const double* __restrict a, const double* __restrict b, double* __restrict c,
                  int64_t k, int64_t n, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  constexpr int kRows = 4, kCols = 8;
  for (int64_t k0 = 0; k0 < k; k0 += kDepth) {
    const int64_t k1 = std::min(k, k0 + kDepth);
    int64_t i = i0;
    for (; i + kRows <= i1; i += kRows) {
      int64_t j = j0;
      for (; j + kCols <= j1; j += kCols) {
        // Two 4-wide vectors per row: eight accumulators of 4 doubles.
        Vec4 block[kRows][2];
        for (int r = 0; r < kRows; ++r) {
          std::memcpy(&block[r][0], c + (i + r) * n + j, sizeof(Vec4));
          std::memcpy(&block[r][1], c + (i + r) * n + j + 4, sizeof(Vec4));
        }
        for (int64_t kk = k0; kk < k1; ++kk) {
          Vec4 b0, b1;
          std::memcpy(&b0, b + kk * n + j, sizeof(Vec4));
          std::memcpy(&b1, b + kk * n + j + 4, sizeof(Vec4));
          for (int r = 0; r < kRows; ++r) {
            const double av = a[(i + r) * k + kk];
            block[r][0] += av * b0;
            block[r][1] += av * b1;
          }
        }
        for (int r = 0; r < kRows; ++r) {
          std::memcpy(c + (i + r) * n + j, &block[r][0], sizeof(Vec4));
          std::memcpy(c + (i + r) * n + j + 4, &block[r][1], sizeof(Vec4));
        }
      }
      for (; j < j1; ++j) {  // column tail
        for (int r = 0; r < kRows; ++r) {
          double sum = c[(i + r) * n + j];
          for (int64_t kk = k0; kk < k1; ++kk) sum += a[(i + r) * k + kk] * b[kk * n + j];
          c[(i + r) * n + j] = sum;
        }
      }
    }
    for (; i < i1; ++i) {  // row tail
      double* __restrict crow = c + i * n;
      for (int64_t kk = k0; kk < k1; ++kk) {
        const double av = a[i * k + kk];
        const double* __restrict brow = b + kk * n;
        for (int64_t j = j0; j < j1; ++j) crow[j] += av * brow[j];
      }
    }
  }
}

template <typename Fn>
void ParallelFor(int64_t count, int threads, Fn fn) {
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t t = next++; t < count; t = next++) fn(t);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& th : pool) th.join();
}

}  // namespace

std::vector<double> ReferenceProduct(const GemmProblem& p, const float* a, const float* b,
                                     int threads) {
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const int64_t m = p.m, n = BColumns(p), k = p.k;
  std::vector<double> acc(static_cast<size_t>(p.batch_count * m * n), 0.0);
  std::vector<double> ad(static_cast<size_t>(m * k)), bd(static_cast<size_t>(k * n));
  for (int64_t bt = 0; bt < p.batch_count; ++bt) {
    // Pack this batch's operands row-major in float64.
    ParallelFor(m, threads, [&](int64_t i) {
      for (int64_t kk = 0; kk < k; ++kk) ad[i * k + kk] = a[ElementIndex(p.a, bt, i, kk)];
    });
    ParallelFor(k, threads, [&](int64_t kk) {
      for (int64_t j = 0; j < n; ++j) bd[kk * n + j] = b[ElementIndex(p.b, bt, kk, j)];
    });
    double* c = acc.data() + bt * m * n;
    const int64_t row_tiles = (m + kTileRows - 1) / kTileRows;
    const int64_t col_tiles = (n + kTileCols - 1) / kTileCols;
    ParallelFor(row_tiles * col_tiles, threads, [&](int64_t t) {
      const int64_t i0 = (t / col_tiles) * kTileRows, j0 = (t % col_tiles) * kTileCols;
      MultiplyTile(ad.data(), bd.data(), c, k, n, i0, std::min(m, i0 + kTileRows), j0,
                   std::min(n, j0 + kTileCols));
    });
  }
  return acc;
}

double ApplyActivation(Activation act, double x) { return support::RefActivate(act, x); }

double RelativeError(const GemmProblem& p, const std::vector<double>& acc, const float* c,
                     const float* bias, const float* d, bool with_epilogue) {
  const auto& e = p.epilogue;
  const bool gated = e.gate == Gate::kHalves;
  const int64_t acc_n = BColumns(p);
  double num = 0, den = 0;
  bool finite = true;
  for (int64_t bt = 0; bt < p.batch_count; ++bt) {
    for (int64_t i = 0; i < p.m; ++i) {
      // alpha * acc + beta * C (+ bias) of column j of the product.
      auto value = [&](int64_t j, bool biased) {
        double v = e.alpha * acc[(bt * p.m + i) * acc_n + j];
        if (e.beta != 0.0f) v += e.beta * c[ElementIndex(p.c, bt, i, j)];
        if (biased && e.bias == BiasMode::kPerColumn) v += bias[bt * e.bias_batch_stride + j];
        if (biased && e.bias == BiasMode::kPerRow) v += bias[bt * e.bias_batch_stride + i];
        return v;
      };
      for (int64_t j = 0; j < p.n; ++j) {
        double ref = value(j, with_epilogue);
        if (with_epilogue) {
          ref = ApplyActivation(e.activation, ref);
          if (gated) ref *= value(p.n + j, true);  // act(gate) * up
        }
        const double got = d[ElementIndex(p.d, bt, i, j)];
        if (!std::isfinite(got)) finite = false;
        num += (got - ref) * (got - ref);
        den += ref * ref;
      }
    }
  }
  if (!finite) return INFINITY;
  return std::sqrt(num / std::max(den, 1e-300));
}

double Tolerance(DataType type, bool tf32) {
  switch (type) {
    case DataType::kF32:
      return tf32 ? 1e-2 : 1e-4;
    case DataType::kF16:
      return 2e-3;
    case DataType::kBF16:
      return 1e-2;
  }
  return 1e-2;
}

}  // namespace jitgemm::bench
