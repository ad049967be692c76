// The cuBLASLt backend on a GPU: results against a float64 reference for
// each mapping case, with packed and with 16-byte pointers, and creation
// (Describe, what needs an elementwise factory). Without a CUDA device these
// tests skip, except the one that checks that creation then fails cleanly.
// The elementwise-pass seam, streams and capture: cublas_pass_test.cc.
#include "backends/cublas_backend.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/gpu_env.h"
#include "tests/backends/cublas_case.h"

namespace jitgemm {
namespace {

using cublas_test::Case;
using cublas_test::Packed;
using cublas_test::Problem;
using cublas_test::Tolerance;
using ::testing::HasSubstr;

struct NamedProblem {
  std::string name;
  GemmProblem problem;
  bool tf32 = false;
};

std::vector<NamedProblem> LtCases() {
  const auto R = Layout::kRowMajor;
  const auto C = Layout::kColMajor;
  std::vector<NamedProblem> cases;
  cases.push_back({"f16_linear_bias_relu", Problem(64, 256, 128, DataType::kF16, DataType::kF16, R,
                                                   C, R, BiasMode::kPerColumn, Activation::kRelu)});
  cases.push_back(
      {"bf16_colmajor_d_row_bias_gelu", Problem(96, 80, 72, DataType::kBF16, DataType::kBF16, C, R,
                                                C, BiasMode::kPerRow, Activation::kGeluTanh)});
  cases.push_back({"bf16_small_m_linear", Problem(3, 2048, 512, DataType::kBF16, DataType::kBF16, R,
                                                  C, R, BiasMode::kNone, Activation::kNone)});
  cases.push_back({"f16_in_f32_out_relu", Problem(40, 72, 64, DataType::kF16, DataType::kF32, R, R,
                                                  R, BiasMode::kNone, Activation::kRelu)});
  GemmProblem f32 = Problem(33, 65, 47, DataType::kF32, DataType::kF32, C, C, R,
                            BiasMode::kPerColumn, Activation::kNone);
  f32.epilogue.alpha = 0.5f;
  f32.epilogue.beta = 2.0f;
  f32.c = f32.d;
  f32.c.ld = f32.d.ld + 3;
  cases.push_back({"f32_alpha_beta_bias", f32});
  cases.push_back({"f32_tf32",
                   Problem(128, 128, 256, DataType::kF32, DataType::kF32, R, R, R, BiasMode::kNone,
                           Activation::kNone),
                   true});
  // Seed 001 shape, small: x (B, G, Din), W (G, Din, Dout), y (B, G, Dout).
  const int64_t B = 48, G = 3, Din = 64, Dout = 96;
  GemmProblem grouped = Problem(B, Dout, Din, DataType::kBF16, DataType::kBF16, R, R, R,
                                BiasMode::kPerColumn, Activation::kRelu);
  grouped.batch_count = G;
  grouped.a = {DataType::kBF16, R, G * Din, Din};
  grouped.b = {DataType::kBF16, R, Dout, Din * Dout};
  grouped.d = {DataType::kBF16, R, G * Dout, Dout};
  grouped.c = grouped.d;
  grouped.epilogue.bias_batch_stride = Dout;
  cases.push_back({"bf16_grouped_strided_output", grouped});
  // One weight broadcast to every batch (stride 0).
  GemmProblem broadcast = Problem(32, 64, 48, DataType::kF16, DataType::kF16, R, C, R,
                                  BiasMode::kNone, Activation::kNone);
  broadcast.batch_count = 4;
  broadcast.a.batch_stride = 32 * 48;
  broadcast.b.batch_stride = 0;
  broadcast.d.batch_stride = 32 * 64;
  broadcast.c = broadcast.d;
  cases.push_back({"f16_batched_broadcast_b", broadcast});
  return cases;
}

class CublasBackendCaseTest : public ::testing::TestWithParam<NamedProblem> {
 protected:
  static absl::StatusOr<std::unique_ptr<Backend>> Create(const NamedProblem& np) {
    Options options;
    options.allow_tf32 = np.tf32;
    return CreateCublasBackend(np.problem, options);
  }

  // Runs `backend` on a fresh case whose pointers lie `offset` bytes past 256
  // and checks D against float64.
  static void RunAndCheck(const Backend& backend, const NamedProblem& np, size_t offset) {
    Case c(np.problem, offset);
    ASSERT_TRUE(backend.Run(c.pointers(), nullptr).ok()) << backend.Describe();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_LT(c.Error(c.Reference(true)), Tolerance(np.problem.d.type, np.tf32))
        << backend.Describe() << ", pointers " << offset << " bytes past 256";
  }
};

TEST_P(CublasBackendCaseTest, MatchesFloat64Reference) {
  JITGEMM_REQUIRE_GPU();
  auto backend = Create(GetParam());
  ASSERT_TRUE(backend.ok()) << backend.status();
  RunAndCheck(**backend, GetParam(), 0);
}

// Pointers 16 bytes past 256-byte alignment, which the default
// Options::pointer_alignment allows, then cudaMalloc's own on the same backend.
TEST_P(CublasBackendCaseTest, MatchesFloat64ReferenceWithSixteenBytePointers) {
  JITGEMM_REQUIRE_GPU();
  auto backend = Create(GetParam());
  ASSERT_TRUE(backend.ok()) << backend.status();
  RunAndCheck(**backend, GetParam(), 16);
  RunAndCheck(**backend, GetParam(), 0);
}

INSTANTIATE_TEST_SUITE_P(Lt, CublasBackendCaseTest, ::testing::ValuesIn(LtCases()),
                         [](const auto& info) { return info.param.name; });

// D rows 4099 elements long (2-byte aligned) and batches 532870 elements
// apart (4-byte aligned), C packed: told only the pointers' 16 bytes, Lt's
// heuristic offered algorithms that faulted with a misaligned address on the
// H100 (the first one with the odd stride, a later one without it). Each of
// the six suggestions the exhaustive tuner may time must run and be right.
TEST(CublasBackendTest, OddLeadingDimensionAndBatchStrideOfDRunEverySuggestion) {
  JITGEMM_REQUIRE_GPU();
  for (int64_t d_stride : {int64_t{532870}, int64_t{532896}}) {
    GemmProblem p =
        Problem(130, 4096, 16, DataType::kBF16, DataType::kBF16, Layout::kRowMajor,
                Layout::kColMajor, Layout::kRowMajor, BiasMode::kNone, Activation::kNone);
    p.batch_count = 4;
    p.a.batch_stride = 2080;
    p.b.batch_stride = 65536;
    p.c.batch_stride = 532480;
    p.d.ld = 4099;
    p.d.batch_stride = d_stride;
    p.epilogue.beta = 1.0f;
    for (int algorithm = 0; algorithm < 6; ++algorithm) {
      SCOPED_TRACE(testing::Message()
                   << "D batch stride " << d_stride << ", suggestion " << algorithm);
      auto backend = CreateCublasBackend(p, Options(), nullptr, algorithm);
      if (absl::IsNotFound(backend.status())) break;
      ASSERT_TRUE(backend.ok()) << backend.status();
      Case c(p);
      ASSERT_TRUE((*backend)->Run(c.pointers(), nullptr).ok()) << (*backend)->Describe();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << (*backend)->Describe();
      EXPECT_LT(c.Error(c.Reference(true)), Tolerance(p.d.type, false)) << (*backend)->Describe();
    }
  }
}

TEST(CublasBackendTest, NoDeviceIsFailedPrecondition) {
  if (support::NoGpuReason().empty()) GTEST_SKIP() << "a CUDA device is present";
  auto backend = CreateCublasBackend(
      Problem(8, 8, 8, DataType::kF16, DataType::kF16, Layout::kRowMajor, Layout::kRowMajor,
              Layout::kRowMajor, BiasMode::kNone, Activation::kNone),
      Options());
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(backend.status().message()), HasSubstr("no CUDA device"));
}

TEST(CublasBackendTest, DescribeNamesTheEpilogue) {
  JITGEMM_REQUIRE_GPU();
  auto backend = CreateCublasBackend(
      Problem(64, 256, 128, DataType::kF16, DataType::kF16, Layout::kRowMajor, Layout::kColMajor,
              Layout::kRowMajor, BiasMode::kPerColumn, Activation::kRelu),
      Options());
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_THAT((*backend)->Describe(), HasSubstr("cublasLt RELU_BIAS"));
}

TEST(CublasBackendTest, ElementwiseCasesAreUnimplementedWithoutAFactory) {
  JITGEMM_REQUIRE_GPU();
  auto backend = CreateCublasBackend(
      Problem(16, 32, 64, DataType::kBF16, DataType::kBF16, Layout::kRowMajor, Layout::kColMajor,
              Layout::kRowMajor, BiasMode::kPerColumn, Activation::kGeluErf),
      Options());
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(backend.status().message()), HasSubstr("gelu_erf"));
}

}  // namespace
}  // namespace jitgemm
