// The activation kernel of jitgemm-bench's addmm_act column: its formulas are
// the library's fused epilogue's, it compiles for sm_90a with NVRTC and moves
// 16 bytes per access (no GPU needed); on a GPU (skipped without one) every
// type and activation against the float64 formulas, aligned and not.
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/host_types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "tools/bench/activation_kernel.h"
#include "tools/bench/cuda_util.h"
#include "tools/bench/host_data.h"
#include "tools/bench/reference.h"

namespace jitgemm::bench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr DataType kTypes[] = {DataType::kF32, DataType::kF16, DataType::kBF16};
constexpr Activation kActivations[] = {Activation::kRelu, Activation::kGeluTanh,
                                       Activation::kGeluErf, Activation::kSilu};

std::string ReadSource(const std::string& relative) {
  std::ifstream f(std::string(JITGEMM_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

bool NvrtcLoads(std::string* why) {
  int major = 0, minor = 0;
  const nvrtcResult r = nvrtcVersion(&major, &minor);
  if (r != NVRTC_SUCCESS) *why = nvrtcGetErrorString(r);
  return r == NVRTC_SUCCESS;
}

TEST(ActivationKernelTest, ActivateIsTheFusedEpiloguesCharacterForCharacter) {
  const std::string epilogue = ReadSource("kernels_src/common/epilogue.cuh");
  const size_t begin =
      epilogue.find("template <int kAct>\n__device__ __forceinline__ float Activate");
  ASSERT_NE(begin, std::string::npos) << "Activate moved: update the bench's copy and this test";
  const size_t end = epilogue.find("\n}\n", begin);
  ASSERT_NE(end, std::string::npos);
  const std::string activate = epilogue.substr(begin, end + 3 - begin);
  EXPECT_THAT(std::string(ActivationKernelSource()), HasSubstr(activate));
}

TEST(ActivationKernelTest, NamesEveryTypeAndActivation) {
  EXPECT_EQ(*ActivationKernelName(DataType::kBF16, Activation::kSilu), "bench_act_bf16_silu");
  EXPECT_EQ(*ActivationKernelName(DataType::kF16, Activation::kGeluErf), "bench_act_f16_gelu_erf");
  EXPECT_EQ(*ActivationKernelName(DataType::kF32, Activation::kRelu), "bench_act_f32_relu");
  EXPECT_THAT(ActivationKernelName(DataType::kF16, Activation::kNone),
              support::StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("none")));
}

TEST(ActivationKernelTest, CompilesForSm90aWithEveryKernelAndVectorAccesses) {
  std::string why;
  if (!NvrtcLoads(&why)) GTEST_SKIP() << "NVRTC unavailable: " << why;
  absl::StatusOr<std::vector<char>> cubin = CompileActivationKernels("sm_90a");
  ASSERT_TRUE(cubin.ok()) << cubin.status();
  const std::string image(cubin->begin(), cubin->end());
  absl::StatusOr<std::vector<char>> ptx_bytes = CompileActivationKernels("compute_90a");
  ASSERT_TRUE(ptx_bytes.ok()) << ptx_bytes.status();
  const std::string ptx(ptx_bytes->begin(), ptx_bytes->end());
  for (DataType t : kTypes) {
    for (Activation a : kActivations) {
      const std::string name = *ActivationKernelName(t, a);
      EXPECT_THAT(image, HasSubstr(name));
      EXPECT_THAT(ptx, HasSubstr(".entry " + name));
    }
  }
  // 16 bytes per load and store, and the erf / tanh / exp of the epilogue.
  EXPECT_THAT(ptx, HasSubstr("v4.u32"));
  EXPECT_THAT(ptx, HasSubstr("cvt.rn.bf16x2.f32"));
  EXPECT_THAT(ptx, HasSubstr("cvt.rn.f16x2.f32"));
  EXPECT_THAT(ptx, Not(HasSubstr("cvt.f64")));  // float math, as the epilogue
}

TEST(ActivationKernelTest, ReportsNvrtcErrors) {
  std::string why;
  if (!NvrtcLoads(&why)) GTEST_SKIP() << "NVRTC unavailable: " << why;
  EXPECT_THAT(CompileActivationKernels("sm_1"),
              support::StatusIs(absl::StatusCode::kInternal, HasSubstr("NVRTC (sm_1)")));
}

// ---------------------------------------------------------------------------
// On a GPU.

bool HasDevice(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) *why = cudaGetErrorString(err);
  if (err == cudaSuccess && count == 0) *why = "cudaGetDeviceCount returned 0";
  return err == cudaSuccess && count > 0;
}

// |got - want| allowed: a few float ulps before rounding, then one of the type.
// fp32 GELU near -4 computes 0.5 x (1 + erf(x)) with 1 + erf(x) cancelling:
// its absolute error is about one ulp of 1 times |x|.
double Allowed(DataType t, double want, double x) {
  const double rel = t == DataType::kF32 ? 4e-6 : (t == DataType::kF16 ? 1.0 / 1024 : 1.0 / 128);
  return rel * std::abs(want) + (t == DataType::kF32 ? 1.5e-7 * (1.0 + std::abs(x)) : 1e-4);
}

TEST(ActivationKernelGpuTest, EveryTypeAndActivationMatchesTheFormulas) {
  std::string why;
  if (!HasDevice(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  absl::StatusOr<std::unique_ptr<ActivationKernel>> kernel = ActivationKernel::Create();
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  for (DataType t : kTypes) {
    for (Activation a : kActivations) {
      // 100003: the vector loop and a tail; offset 1: a pointer off 16 bytes.
      for (int64_t count : {int64_t{1}, int64_t{7}, int64_t{4096}, int64_t{100003}}) {
        for (int64_t offset : {int64_t{0}, int64_t{1}}) {
          HostBuffer h = RandomBuffer(t, count + offset, 3);
          for (float& v : h.values) v *= 4;  // [-4, 4]: every branch of the curves
          std::vector<unsigned char> bytes(h.bytes.size());
          for (size_t i = 0; i < h.values.size(); ++i) StoreAs(t, bytes.data(), i, h.values[i]);
          DeviceBuffer d;
          ASSERT_TRUE(d.Allocate(bytes.size()).ok());
          ASSERT_EQ(cudaMemcpy(d.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
                    cudaSuccess);
          void* data = static_cast<char*>(d.get()) + offset * DataTypeSize(t);
          ASSERT_TRUE((*kernel)->Launch(data, count, t, a, nullptr).ok());
          std::vector<unsigned char> raw(bytes.size());
          ASSERT_EQ(cudaMemcpy(raw.data(), d.get(), raw.size(), cudaMemcpyDeviceToHost),
                    cudaSuccess);
          const std::vector<float> got = DecodeElements(t, raw.data(), count + offset);
          if (offset == 1) {
            ASSERT_EQ(got[0], h.values[0]) << "wrote before the start";
          }
          for (int64_t i = offset; i < count + offset; ++i) {
            const double want = ApplyActivation(a, h.values[i]);
            ASSERT_NEAR(got[i], want, a == Activation::kRelu ? 0.0 : Allowed(t, want, h.values[i]))
                << DataTypeName(t) << " " << ActivationName(a) << " x=" << h.values[i] << " at "
                << i << " of " << count << " (offset " << offset << ")";
          }
        }
      }
    }
  }
}

TEST(ActivationKernelGpuTest, NoneLaunchesNothing) {
  std::string why;
  if (!HasDevice(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  absl::StatusOr<std::unique_ptr<ActivationKernel>> kernel = ActivationKernel::Create();
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_TRUE((*kernel)->Launch(nullptr, 100, DataType::kF16, Activation::kNone, nullptr).ok());
}

}  // namespace
}  // namespace jitgemm::bench
