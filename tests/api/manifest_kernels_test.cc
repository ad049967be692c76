// The kernels a manifest needs: a gated problem's list holds the gate pass
// of its cuBLAS route beside its JIT kernels, unless its options say JIT only.
#include "api/src/manifest_kernels.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "api/src/manifest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jitgemm::tools {
namespace {

// y = silu(x W_gate^T) * (x W_up^T), B = torch.cat([W_gate, W_up]) column-major.
GemmProblem Swiglu() {
  GemmProblem p = MakeGemm(512, 3072, 1024, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.activation = Activation::kSilu;
  p.epilogue.bias = BiasMode::kPerColumn;
  return p;
}

std::string WriteManifest(const std::string& name, BackendPolicy backend) {
  Manifest m;
  m.options.backend = backend;
  m.problems.push_back({"swiglu", Swiglu()});
  const std::string path =
      (std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()) + ".json"))
          .string();
  std::ofstream(path) << ManifestToJson(m);
  return path;
}

std::vector<std::string> Names(const ManifestKernels& k) {
  std::vector<std::string> out;
  for (const ManifestKernel& m : k.kernels) out.push_back(m.source.kernel_name);
  return out;
}

TEST(ManifestKernelsTest, GatedProblemsListTheGatePassOfTheCublasRoute) {
  const std::string path = WriteManifest("gated_auto", BackendPolicy::kAuto);
  absl::StatusOr<TargetArch> hopper = ResolveTarget("sm_90a", 0);
  ASSERT_TRUE(hopper.ok()) << hopper.status();
  absl::StatusOr<ManifestKernels> k = LoadManifestKernels({path}, *hopper, std::nullopt);
  ASSERT_TRUE(k.ok()) << k.status();
  // Lt adds the bias (row-major D), so the pass only gates.
  EXPECT_THAT(Names(*k), ::testing::Contains(::testing::StartsWith("gemm_gate_bf16_rc_r_1x8x1")));
  EXPECT_THAT(Names(*k), ::testing::Contains(::testing::HasSubstr("_silu_glu")));
  for (const std::string& n : Names(*k)) {
    if (n.rfind("gemm_gate_", 0) == 0) {
      EXPECT_THAT(n, ::testing::Not(::testing::HasSubstr("bias")));
    }
  }
  // Before Hopper the sm80 family gates (no sm90 kernel), beside the pass.
  absl::StatusOr<TargetArch> ampere = ResolveTarget("sm_80", 0);
  ASSERT_TRUE(ampere.ok()) << ampere.status();
  k = LoadManifestKernels({path}, *ampere, std::nullopt);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_THAT(Names(*k), ::testing::Contains(::testing::StartsWith("gemm_gate_")));
  EXPECT_THAT(Names(*k), ::testing::Contains(::testing::StartsWith("gemm_sm80_")));
  for (const std::string& n : Names(*k)) {
    EXPECT_THAT(n, ::testing::Not(::testing::StartsWith("gemm_sm90_")));
  }
  std::remove(path.c_str());
}

TEST(ManifestKernelsTest, CublasOnlyKeepsThePassJitOnlyDropsIt) {
  absl::StatusOr<TargetArch> hopper = ResolveTarget("sm_90a", 0);
  ASSERT_TRUE(hopper.ok()) << hopper.status();
  const std::string cublas = WriteManifest("gated_cublas", BackendPolicy::kCublasOnly);
  absl::StatusOr<ManifestKernels> k = LoadManifestKernels({cublas}, *hopper, std::nullopt);
  ASSERT_TRUE(k.ok()) << k.status();
  ASSERT_EQ(k->kernels.size(), 1u);
  EXPECT_THAT(k->kernels[0].source.kernel_name, ::testing::StartsWith("gemm_gate_"));
  const std::string jit = WriteManifest("gated_jit", BackendPolicy::kJitOnly);
  k = LoadManifestKernels({jit}, *hopper, std::nullopt);
  ASSERT_TRUE(k.ok()) << k.status();
  for (const std::string& n : Names(*k)) {
    EXPECT_THAT(n, ::testing::Not(::testing::StartsWith("gemm_gate_")));
  }
  std::remove(cublas.c_str());
  std::remove(jit.c_str());
}

}  // namespace
}  // namespace jitgemm::tools
