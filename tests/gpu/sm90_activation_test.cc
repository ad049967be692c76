// The sm90 family's activations for 16-bit D, element by element against
// float64 over x in [-12, 12]: a product whose k = 0 term alone is nonzero,
// D[m][n] = act(x_m * s_n), exact in fp32 before the activation, so that every
// difference comes from the activation and D's rounding. The relative
// Frobenius error of the random tests cannot see a wrong negative tail, where
// GELU is small; this test can: 0.5 (1 + erff) was 1.9e-3 off near x = -4 in
// fp16, four times D's rounding.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/jit_backend.h"
#include "core/host_types.h"
#include "gtest/gtest.h"
#include "jit/driver_api.h"
#include "jit/family.h"
#include "support/gpu_env.h"

namespace jitgemm::support {
namespace {

constexpr int kM = 512, kN = 64, kK = 8;

double Reference(Activation act, double v) {
  switch (act) {
    case Activation::kGeluErf:
      return 0.5 * v * std::erfc(-v / std::sqrt(2.0));
    case Activation::kGeluTanh: {
      const double u = std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v);
      return v / (1.0 + std::exp(-2.0 * u));
    }
    case Activation::kSilu:
      return v / (1.0 + std::exp(-v));
    default:
      return v;
  }
}

// The element of D furthest outside D's rounding (half an ulp, at least the
// smallest subnormal's for fp16) plus 2^-12 of the value, and for GELU-tanh
// tanh.approx's 2^-12 |v| (sm90/activation.cuh), or "" if none is;
// `worst_rel` gets the largest relative error where |act| >= 2^-14 (fp16's
// smallest normal number) and `worst_x` where it was.
std::string WorstMismatch(Activation act, DataType type, const std::vector<float>& x,
                          const std::vector<float>& s, const std::vector<uint8_t>& d,
                          double* worst_rel, double* worst_x) {
  const double rel =
      (type == DataType::kF16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8)) + std::ldexp(1.0, -12);
  const double abs = type == DataType::kF16 ? 6e-8 : 1e-9;
  double worst = 1;
  std::string what;
  *worst_rel = 0;
  for (int m = 0; m < kM; ++m) {
    for (int n = 0; n < kN; ++n) {
      const double v = static_cast<double>(x[m]) * s[n];
      const double want = Reference(act, v);
      const double got = LoadAs(type, d.data(), static_cast<int64_t>(m) * kN + n);
      const double err = std::fabs(got - want);
      if (std::fabs(want) >= std::ldexp(1.0, -14) && err / std::fabs(want) > *worst_rel) {
        *worst_rel = err / std::fabs(want);
        *worst_x = v;
      }
      const double approx = act == Activation::kGeluTanh ? std::ldexp(std::fabs(v), -12) : 0.0;
      const double ratio = err / (rel * std::fabs(want) + abs + approx);
      if (!(ratio <= worst)) {  // NaN included
        worst = std::isnan(ratio) ? INFINITY : ratio;
        what = absl::StrCat("act(", v, ") = ", got, ", want ", want);
      }
    }
  }
  return what;
}

class Sm90ActivationGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JITGEMM_REQUIRE_GPU();
    auto api = jit::GetDriver();
    ASSERT_TRUE(api.ok()) << api.status();
    auto device = jit::CurrentDevice(**api);
    ASSERT_TRUE(device.ok()) << device.status();
    if (device->target.sm != 90) GTEST_SKIP() << "the sm90 family needs an sm_90 GPU";
    device_ = *device;
  }
  jit::DeviceContext device_;
};

TEST_F(Sm90ActivationGpuTest, ActivationsFor16BitDMatchFloat64ElementByElement) {
  int checked = 0;
  for (DataType type : {DataType::kF16, DataType::kBF16}) {
    // x_m over [-12, 12] as the type holds it; s_n = 1 + n / 64 is exact in
    // both types, and so is each product in fp32.
    Buffer a, b, d;
    ASSERT_EQ(a.Allocate(kM * kK * 2, 0), cudaSuccess);
    ASSERT_EQ(b.Allocate(kN * kK * 2, 0), cudaSuccess);
    ASSERT_EQ(d.Allocate(kM * kN * 2, 0), cudaSuccess);
    std::vector<float> x(kM), s(kN);
    for (int m = 0; m < kM; ++m) {
      StoreAs(type, a.host.data(), static_cast<int64_t>(m) * kK, -12.f + 24.f * m / (kM - 1));
      x[m] = LoadAs(type, a.host.data(), static_cast<int64_t>(m) * kK);
    }
    for (int n = 0; n < kN; ++n) {
      s[n] = 1.f + n / 64.f;
      StoreAs(type, b.host.data(), static_cast<int64_t>(n) * kK, s[n]);  // B is K-major
    }
    ASSERT_EQ(a.Upload(), cudaSuccess);
    ASSERT_EQ(b.Upload(), cudaSuccess);
    for (Activation act : {Activation::kGeluErf, Activation::kGeluTanh, Activation::kSilu}) {
      GemmProblem p;
      p.m = kM;
      p.n = kN;
      p.k = kK;
      p.a = {type, Layout::kRowMajor, kK, kNoStride};
      p.b = {type, Layout::kColMajor, kK, kNoStride};
      p.c = p.d = {type, Layout::kRowMajor, kN, kNoStride};
      p.epilogue.activation = act;
      p = Canonicalize(p);
      ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
      const auto configs =
          jit::GetFamily(jit::Family::kSm90).Candidates(p, device_.target, TuningPolicy::kFast);
      ASSERT_FALSE(configs.empty());
      Options options;
      bool compiled = false;
      auto backend = JitBackend::Create(p, configs.front(), options, device_, &compiled);
      ASSERT_TRUE(backend.ok()) << backend.status();
      ASSERT_EQ(d.Poison(), cudaSuccess);
      ASSERT_TRUE((*backend)->Run({a.device, b.device, nullptr, d.device, nullptr}, nullptr).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      ASSERT_EQ(d.Download(), cudaSuccess);
      double worst_rel = 0, worst_x = 0;
      EXPECT_EQ(WorstMismatch(act, type, x, s, d.host, &worst_rel, &worst_x), "")
          << DataTypeName(type) << " " << (*backend)->Describe();
      std::printf("%s %s: largest relative error %.2e (x = %.4f) where |act(x)| >= 2^-14\n",
                  DataTypeName(type), (*backend)->Describe().c_str(), worst_rel, worst_x);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6);
}

}  // namespace
}  // namespace jitgemm::support
