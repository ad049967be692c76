// The kernels a manifest needs: a problem's list holds the passes of its
// cuBLAS routes (a gated problem's gate pass, an ungated one's elementwise
// passes) beside its JIT kernels, unless its options say JIT only.
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

std::string WriteManifest(const std::string& name, BackendPolicy backend,
                          const GemmProblem& problem = Swiglu()) {
  Manifest m;
  m.options.backend = backend;
  m.problems.push_back({"problem", problem});
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

// An ungated problem's cuBLAS routes: Lt's fused RELU_BIAS needs no pass, its
// BIAS product with the activation in the pass needs a ReLU-only one; SiLU,
// which Lt lacks, always takes its pass.
TEST(ManifestKernelsTest, UngatedProblemsListTheElementwisePassesOfTheCublasRoutes) {
  absl::StatusOr<TargetArch> hopper = ResolveTarget("sm_90a", 0);
  ASSERT_TRUE(hopper.ok()) << hopper.status();
  GemmProblem p = MakeGemm(512, 1024, 1024, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  p.epilogue.bias = BiasMode::kPerColumn;
  for (auto [act, suffix] :
       {std::pair{Activation::kRelu, "_relu"}, std::pair{Activation::kGeluTanh, "_gelu_tanh"},
        std::pair{Activation::kSilu, "_silu"}}) {
    p.epilogue.activation = act;
    const std::string path = WriteManifest("ungated", BackendPolicy::kAuto, p);
    absl::StatusOr<ManifestKernels> k = LoadManifestKernels({path}, *hopper, std::nullopt);
    std::remove(path.c_str());
    ASSERT_TRUE(k.ok()) << k.status();
    std::vector<std::string> passes;
    for (const std::string& n : Names(*k)) {
      if (n.rfind("gemm_elementwise_", 0) == 0) passes.push_back(n);
    }
    ASSERT_EQ(passes.size(), 1u) << ActivationName(act);
    EXPECT_THAT(passes[0], ::testing::StartsWith("gemm_elementwise_bf16_rc_r_1x8x1"));
    EXPECT_THAT(passes[0], ::testing::HasSubstr(suffix));
    EXPECT_THAT(passes[0], ::testing::Not(::testing::HasSubstr("bias"))) << "Lt adds the bias";
  }
  p.epilogue.activation = Activation::kNone;  // Lt's BIAS alone: no pass
  const std::string path = WriteManifest("plain", BackendPolicy::kAuto, p);
  absl::StatusOr<ManifestKernels> k = LoadManifestKernels({path}, *hopper, std::nullopt);
  std::remove(path.c_str());
  ASSERT_TRUE(k.ok()) << k.status();
  for (const std::string& n : Names(*k)) {
    EXPECT_THAT(n, ::testing::Not(::testing::StartsWith("gemm_elementwise_")));
  }
}

// Each problem's kernels follow its own options where it has them: the
// manifest says cuBLAS only, and the second problem, planned with JIT kernels,
// lists the JIT candidates.
TEST(ManifestKernelsTest, AProblemsOwnOptionsDecideItsKernels) {
  absl::StatusOr<TargetArch> hopper = ResolveTarget("sm_90a", 0);
  ASSERT_TRUE(hopper.ok()) << hopper.status();
  Manifest m;
  m.options.backend = BackendPolicy::kCublasOnly;
  GemmProblem p = MakeGemm(512, 1024, 1024, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  m.problems.push_back({"cublas", p});
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("own_options" + std::to_string(::getpid()) + ".json"))
                               .string();
  std::ofstream(path) << ManifestToJson(m);
  absl::StatusOr<ManifestKernels> k = LoadManifestKernels({path}, *hopper, std::nullopt);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_TRUE(k->kernels.empty());
  Options jit = m.options;
  jit.backend = BackendPolicy::kJitOnly;
  m.problems.push_back({"jit", p, jit});
  std::ofstream(path) << ManifestToJson(m);
  k = LoadManifestKernels({path}, *hopper, std::nullopt);
  std::remove(path.c_str());
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->problems, 2);
  EXPECT_THAT(Names(*k), ::testing::Contains(::testing::StartsWith("gemm_sm90_")));
  for (const ManifestKernel& kernel : k->kernels) EXPECT_EQ(kernel.problem, "jit");
}

}  // namespace
}  // namespace jitgemm::tools
