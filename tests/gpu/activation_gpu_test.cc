// The activations of 16-bit and fp32 D on every path that stores them,
// element by element against float64 over x in [-12, 12]: a product whose k = 0 term
// alone is nonzero, D[m][n] = act(x_m * s_n), exact in fp32 before the
// activation, so that every difference comes from the activation and D's
// rounding. The relative Frobenius error of the random tests cannot see a
// wrong negative tail, where GELU is small; this test can: 0.5 (1 + erff) was
// 1.9e-3 off near x = -4 in fp16, four times D's rounding. The cuBLAS route
// activates the product cuBLASLt rounded into D's type, as F.linear and an
// activation do, so there the reference is act of the rounded product. fp32
// D must hold 2^-17 of each value (1e-9 absolute, where GELU-erf flushes to
// 0 below x = -4.5 sqrt 2): 0.5 x (1 + erff) was 4.6e-4 off near x = -4.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/jit_backend.h"
#include "core/host_types.h"
#include "gtest/gtest.h"
#include "jit/driver_api.h"
#include "jit/family.h"
#include "jitgemm/plan.h"
#include "support/gpu_env.h"
#include "support/reference.h"
#include "tests/gpu/gpu_case.h"

namespace jitgemm::support {
namespace {

constexpr int kN = 64, kK = 8;

// The element of D furthest outside D's rounding (half an ulp, at least the
// smallest subnormal's for fp16) plus 2^-12 of the value, and for GELU-tanh
// tanh.approx's 2^-12 |v| (sm90/activation.cuh), or "" if none is;
// `worst_rel` gets the largest relative error where |act| >= 2^-14 (fp16's
// smallest normal number) and `worst_x` where it was.
std::string WorstMismatch(const GemmProblem& p, bool rounded_product, const std::vector<float>& x,
                          const std::vector<float>& s, const std::vector<uint8_t>& d,
                          double* worst_rel, double* worst_x) {
  const Activation act = p.epilogue.activation;
  const DataType type = p.d.type;
  const double rel = type == DataType::kF32
                         ? std::ldexp(1.0, -17)
                         : (type == DataType::kF16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8)) +
                               std::ldexp(1.0, -12);
  const double abs = type == DataType::kF16 ? 6e-8 : 1e-9;
  double worst = 1;
  std::string what;
  *worst_rel = 0;
  for (int64_t m = 0; m < p.m; ++m) {
    for (int64_t n = 0; n < p.n; ++n) {
      double v = static_cast<double>(x[m]) * s[n];
      if (rounded_product) {
        uint32_t r = 0;  // wide enough for any type
        StoreAs(type, &r, 0, static_cast<float>(v));
        v = LoadAs(type, &r, 0);
      }
      const double want = RefActivate(act, v);
      const int64_t at = p.d.layout == Layout::kRowMajor ? m * p.d.ld + n : n * p.d.ld + m;
      const double got = LoadAs(type, d.data(), at);
      const double err = std::fabs(got - want);
      if (std::fabs(want) >= std::ldexp(1.0, -14) && err / std::fabs(want) > *worst_rel) {
        *worst_rel = err / std::fabs(want);
        *worst_x = v;
      }
      const double approx = act == Activation::kGeluTanh && type != DataType::kF32
                                ? std::ldexp(std::fabs(v), -12)
                                : 0.0;
      const double ratio = err / (rel * std::fabs(want) + abs + approx);
      if (!(ratio <= worst)) {  // NaN included
        worst = std::isnan(ratio) ? INFINITY : ratio;
        what = absl::StrCat("act(", v, ") = ", got, ", want ", want);
      }
    }
  }
  return what;
}

// One way of storing 16-bit D: a JIT family's first fast candidate, or the
// cuBLAS route (cuBLASLt, then the elementwise pass for the activations Lt
// lacks).
struct Path {
  const char* name;
  bool jit;
  jit::Family family;
  Layout d_layout;
  int m;
};

class ActivationGpuTest : public Sm90GpuTest {
 protected:
  // Runs `p` on `path` into `d`; returns what it ran.
  std::string Run(const Path& path, const GemmProblem& p, const Buffer& a, const Buffer& b,
                  Buffer& d) {
    if (d.Poison() != cudaSuccess) return "cudaMemset failed";
    const GemmPointers ptrs{a.device, b.device, nullptr, d.device, nullptr};
    std::string what;
    if (path.jit) {
      const auto configs =
          jit::GetFamily(path.family).Candidates(p, device_.target, TuningPolicy::kFast);
      if (configs.empty()) return "no candidate";
      bool compiled = false;
      auto backend = JitBackend::Create(p, configs.front(), Options{}, device_, &compiled);
      if (!backend.ok()) return backend.status().ToString();
      if (absl::Status s = (*backend)->Run(ptrs, nullptr); !s.ok()) return s.ToString();
      what = (*backend)->Describe();
    } else {
      Options options;
      options.backend = BackendPolicy::kCublasOnly;
      options.tuning = TuningPolicy::kHeuristic;
      absl::StatusOr<Plan> plan = Plan::Create(p, options);
      if (!plan.ok()) return plan.status().ToString();
      if (absl::Status s = plan->Run(ptrs, nullptr); !s.ok()) return s.ToString();
      what = plan->info().kernel_name;
    }
    if (cudaDeviceSynchronize() != cudaSuccess || d.Download() != cudaSuccess) {
      return "kernel failed";
    }
    return what;
  }

  // Every path that stores D, with f16 and bf16 inputs, D of the inputs' type
  // or (`f32_d`) fp32. The staged sm90 epilogue takes fp32 D only with more
  // tiles than SMs.
  void CheckPaths(bool f32_d, int* checked) {
    const Path paths[] = {
        {"sm90 staged stores", true, jit::Family::kSm90, Layout::kRowMajor, f32_d ? 24576 : 512},
        {"sm90 register stores", true, jit::Family::kSm90, Layout::kColMajor, 512},
        {"sm80", true, jit::Family::kSm80, Layout::kRowMajor, 512},
        {"small_m", true, jit::Family::kSmallM, Layout::kRowMajor, 64},
        {"cuBLAS route", false, jit::Family::kElementwise, Layout::kRowMajor, 512},
    };
    for (const Path& path : paths) {
      for (DataType type : {DataType::kF16, DataType::kBF16}) {
        // x_m over [-12, 12] as the type holds it; s_n = 1 + n / 64 is exact
        // in both types, and so is each product in fp32.
        const int m_count = path.m;
        const DataType d_type = f32_d ? DataType::kF32 : type;
        Buffer a, b, d;
        ASSERT_EQ(a.Allocate(m_count * kK * 2, 0), cudaSuccess);
        ASSERT_EQ(b.Allocate(kN * kK * 2, 0), cudaSuccess);
        ASSERT_EQ(d.Allocate(m_count * kN * DataTypeSize(d_type), 0), cudaSuccess);
        std::vector<float> x(m_count), s(kN);
        for (int m = 0; m < m_count; ++m) {
          StoreAs(type, a.host.data(), int64_t{m} * kK, -12.f + 24.f * m / (m_count - 1));
          x[m] = LoadAs(type, a.host.data(), int64_t{m} * kK);
        }
        for (int n = 0; n < kN; ++n) {
          s[n] = 1.f + n / 64.f;
          StoreAs(type, b.host.data(), int64_t{n} * kK, s[n]);  // B is K-major
        }
        ASSERT_EQ(a.Upload(), cudaSuccess);
        ASSERT_EQ(b.Upload(), cudaSuccess);
        for (Activation act : {Activation::kGeluErf, Activation::kGeluTanh, Activation::kSilu}) {
          // cuBLASLt fuses GELU-tanh itself: not this project's activation.
          if (!path.jit && act == Activation::kGeluTanh) continue;
          GemmProblem p;
          p.m = m_count;
          p.n = kN;
          p.k = kK;
          p.a = {type, Layout::kRowMajor, kK, kNoStride};
          p.b = {type, Layout::kColMajor, kK, kNoStride};
          p.d = {d_type, path.d_layout, path.d_layout == Layout::kRowMajor ? kN : m_count,
                 kNoStride};
          p.c = p.d;
          p.epilogue.activation = act;
          p = Canonicalize(p);
          ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
          const std::string ran = Run(path, p, a, b, d);
          double worst_rel = 0, worst_x = 0;
          EXPECT_EQ(WorstMismatch(p, !path.jit, x, s, d.host, &worst_rel, &worst_x), "")
              << path.name << ": " << ran;
          std::printf(
              "%s %s -> %s %s (%s): largest relative error %.2e (x = %.4f) where |act| >= 2^-14\n",
              path.name, DataTypeName(type), DataTypeName(p.d.type), ActivationName(act),
              ran.c_str(), worst_rel, worst_x);
          ++*checked;
        }
      }
    }
  }
};

TEST_F(ActivationGpuTest, Every16BitDPathMatchesFloat64ElementByElement) {
  int checked = 0;
  CheckPaths(/*f32_d=*/false, &checked);
  EXPECT_EQ(checked, 4 * 2 * 3 + 2 * 2);
}

// fp32 D from f16 and bf16 inputs (common/activation_f32.cuh).
TEST_F(ActivationGpuTest, EveryF32DPathMatchesFloat64ElementByElement) {
  int checked = 0;
  CheckPaths(/*f32_d=*/true, &checked);
  EXPECT_EQ(checked, 4 * 2 * 3 + 2 * 2);
}

}  // namespace
}  // namespace jitgemm::support
