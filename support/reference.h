// A float64 reference GEMM on the host, reading operands exactly as the
// problem describes them (types, layouts, leading dimensions, batch strides,
// the gated epilogue's [gate | up] halves of B).
#ifndef JITGEMM_TESTS_TESTING_REFERENCE_H_
#define JITGEMM_TESTS_TESTING_REFERENCE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/host_types.h"
#include "jitgemm/problem.h"

namespace jitgemm::support {

inline int64_t ElementIndex(const Operand& op, int64_t row, int64_t col, int64_t batch) {
  const int64_t stride = op.batch_stride == kNoStride ? 0 : op.batch_stride;
  return batch * stride + (op.layout == Layout::kRowMajor ? row * op.ld + col : col * op.ld + row);
}

inline double RefActivate(Activation act, double x) {
  switch (act) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return x > 0 ? x : 0;
    case Activation::kGeluTanh:
      return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case Activation::kGeluErf:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Activation::kSilu:
      return x / (1 + std::exp(-x));
  }
  return x;
}

// ref[b][m][n] as a dense row-major vector per batch. Host buffers a, b, c, bias
// hold the same bytes as the device ones.
inline std::vector<double> ReferenceGemm(const GemmProblem& p, const void* a, const void* b,
                                         const void* c, const void* bias) {
  std::vector<double> out(p.batch_count * p.m * p.n);
  auto work = [&](int64_t row_begin, int64_t row_end) {
    std::vector<double> arow(p.k);
    for (int64_t r = row_begin; r < row_end; ++r) {
      const int64_t batch = r / p.m, i = r % p.m;
      for (int64_t kk = 0; kk < p.k; ++kk)
        arow[kk] = LoadAs(p.a.type, a, ElementIndex(p.a, i, kk, batch));
      // One output column reads column j of B, and column N + j when gated.
      auto column = [&](int64_t j) {
        double acc = 0;
        for (int64_t kk = 0; kk < p.k; ++kk) {
          acc += arow[kk] * LoadAs(p.b.type, b, ElementIndex(p.b, kk, j, batch));
        }
        double v = p.epilogue.alpha * acc;
        if (p.epilogue.beta != 0.f)
          v += p.epilogue.beta * LoadAs(p.c.type, c, ElementIndex(p.c, i, j, batch));
        if (p.epilogue.bias != BiasMode::kNone) {
          const int64_t idx = (p.epilogue.bias == BiasMode::kPerColumn ? j : i) +
                              batch * p.epilogue.bias_batch_stride;
          v += LoadAs(p.d.type, bias, idx);
        }
        return v;
      };
      for (int64_t j = 0; j < p.n; ++j) {
        const double v = RefActivate(p.epilogue.activation, column(j));
        out[r * p.n + j] = p.epilogue.gate == Gate::kHalves ? v * column(p.n + j) : v;
      }
    }
  };
  const int64_t rows = p.batch_count * p.m;
  const int threads =
      static_cast<int>(std::min<int64_t>(rows, std::max(1u, std::thread::hardware_concurrency())));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back(work, rows * t / threads, rows * (t + 1) / threads);
  }
  for (auto& th : pool) th.join();
  return out;
}

// Relative Frobenius error of D (host copy of the device output) against ref;
// NaN or Inf anywhere in D (an unwritten, poisoned element) gives infinity.
// Each reference value counts at least kFloor in the norm: inputs are O(1), and
// where every value of a small D lies in an activation's tail (GELU-erf of -8 is
// -5e-15) a 16-bit result of 0 is right to its precision, yet would be a
// relative error of 1 against the reference's own norm.
inline double RelativeError(const GemmProblem& p, const void* d, const std::vector<double>& ref) {
  constexpr double kFloor = 1e-3;
  double num = 0, den = 0;
  for (int64_t batch = 0; batch < p.batch_count; ++batch) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        const double got = LoadAs(p.d.type, d, ElementIndex(p.d, i, j, batch));
        if (!std::isfinite(got)) return INFINITY;
        const double want = ref[(batch * p.m + i) * p.n + j];
        num += (got - want) * (got - want);
        den += std::max(want * want, kFloor * kFloor);
      }
    }
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

}  // namespace jitgemm::support

#endif  // JITGEMM_TESTS_TESTING_REFERENCE_H_
