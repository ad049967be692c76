// The silu*mul kernel of jitgemm-bench's MLP baseline: it compiles for
// sm_90a with NVRTC, one kernel per type moving 16 bytes per access (no GPU
// needed); on a GPU (skipped without one) every type against float64,
// aligned and not, in place and not.
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/host_types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "tools/bench/cuda_util.h"
#include "tools/bench/glu_kernel.h"
#include "tools/bench/host_data.h"

namespace jitgemm::bench {
namespace {

using ::testing::HasSubstr;

constexpr DataType kTypes[] = {DataType::kF32, DataType::kF16, DataType::kBF16};

bool NvrtcLoads(std::string* why) {
  int major = 0, minor = 0;
  const nvrtcResult r = nvrtcVersion(&major, &minor);
  if (r != NVRTC_SUCCESS) *why = nvrtcGetErrorString(r);
  return r == NVRTC_SUCCESS;
}

TEST(GluKernelTest, CompilesForSm90aWithVectorAccesses) {
  std::string why;
  if (!NvrtcLoads(&why)) GTEST_SKIP() << "NVRTC unavailable: " << why;
  EXPECT_EQ(GluKernelName(DataType::kBF16), "bench_silu_mul_bf16");
  absl::StatusOr<std::vector<char>> ptx_bytes = CompileGluKernels("compute_90a");
  ASSERT_TRUE(ptx_bytes.ok()) << ptx_bytes.status();
  const std::string ptx(ptx_bytes->begin(), ptx_bytes->end());
  for (DataType t : kTypes) EXPECT_THAT(ptx, HasSubstr(".entry " + GluKernelName(t)));
  EXPECT_THAT(ptx, HasSubstr("v4.u32"));
  EXPECT_THAT(ptx, HasSubstr("cvt.rn.bf16x2.f32"));
  absl::StatusOr<std::vector<char>> cubin = CompileGluKernels("sm_90a");
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  EXPECT_THAT(CompileGluKernels("sm_1"),
              support::StatusIs(absl::StatusCode::kInternal, HasSubstr("NVRTC (sm_1)")));
}

TEST(GluKernelGpuTest, EveryTypeMatchesFloat64) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    GTEST_SKIP() << "no CUDA device";
  }
  absl::StatusOr<std::unique_ptr<GluKernel>> kernel = GluKernel::Create();
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  for (DataType t : kTypes) {
    const double rel = t == DataType::kF32 ? 1e-5 : (t == DataType::kF16 ? 2e-3 : 1e-2);
    for (int64_t n : {int64_t{1}, int64_t{9}, int64_t{100003}}) {
      for (int64_t offset : {int64_t{0}, int64_t{1}}) {
        for (bool in_place : {false, true}) {
          const HostBuffer g = RandomBuffer(t, n + offset, 5), u = RandomBuffer(t, n + offset, 6);
          DeviceBuffer dg, du, dout;
          ASSERT_TRUE(dg.Allocate(g.bytes.size()).ok());
          ASSERT_TRUE(du.Allocate(u.bytes.size()).ok());
          ASSERT_TRUE(dout.Allocate(g.bytes.size()).ok());
          cudaMemcpy(dg.get(), g.bytes.data(), g.bytes.size(), cudaMemcpyHostToDevice);
          cudaMemcpy(du.get(), u.bytes.data(), u.bytes.size(), cudaMemcpyHostToDevice);
          const int64_t at = offset * DataTypeSize(t);
          char* gate = static_cast<char*>(dg.get()) + at;
          char* out = in_place ? gate : static_cast<char*>(dout.get()) + at;
          ASSERT_TRUE(
              (*kernel)->Launch(gate, static_cast<char*>(du.get()) + at, out, n, t, nullptr).ok());
          std::vector<unsigned char> raw(g.bytes.size());
          ASSERT_EQ(cudaMemcpy(raw.data(), out - at, raw.size(), cudaMemcpyDeviceToHost),
                    cudaSuccess);
          const std::vector<float> got = DecodeElements(t, raw.data(), n + offset);
          for (int64_t i = offset; i < n + offset; ++i) {
            const double x = g.values[i];
            const double want = x / (1.0 + std::exp(-x)) * u.values[i];
            ASSERT_NEAR(got[i], want, rel * std::abs(want) + 1e-6)
                << DataTypeName(t) << " at " << i << " of " << n << " offset " << offset;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace jitgemm::bench
