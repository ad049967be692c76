// small_m configs run directly (JitBackend), whatever the tuner would pick:
// the wgmma path, cluster-K and bulk-x variants on shapes that reach every
// code path of each, against the float64 reference.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "backends/jit_backend.h"
#include "core/problem_signature.h"
#include "gtest/gtest.h"
#include "jit/driver_api.h"
#include "jit/family.h"
#include "jit/kernel_config.h"
#include "jit/launcher.h"
#include "jitgemm/plan.h"
#include "support/gpu_env.h"
#include "support/reference.h"
#include "tests/gpu/gpu_case.h"

namespace jitgemm::support {
namespace {

// A decode-style problem for the direct small_m config runs below: B
// column-major, and by index an f32 or 16-bit output, alpha, beta, a bias on
// either axis, an activation and, for batches, strides (B's and the bias's 0
// on odd indices).
struct DirectShape {
  int64_t m, n, k;
  DataType t;
  int64_t batch;
  // Column-major A, its leading dimension M + a_pad.
  bool a_col = false;
  int64_t a_pad = 0;
};
GemmProblem DirectProblem(const DirectShape& sh, int i) {
  GemmProblem p = MakeGemm(sh.m, sh.n, sh.k, sh.t);
  p.b.layout = Layout::kColMajor;
  if (sh.a_col) {
    p.a.layout = Layout::kColMajor;
    p.a.ld = sh.m + sh.a_pad;
  }
  p.d.type = i % 3 == 2 ? DataType::kF32 : sh.t;
  p.c.type = p.d.type;
  p.epilogue.alpha = i % 2 ? -1.25f : 1.f;
  p.epilogue.beta = i % 3 == 1 ? 0.75f : 0.f;
  p.epilogue.bias = i % 2 ? BiasMode::kPerColumn : BiasMode::kPerRow;
  p.epilogue.activation =
      i % 2 ? Activation::kGeluTanh : (i % 4 == 0 ? Activation::kSilu : Activation::kRelu);
  if (sh.batch > 1) {
    p.batch_count = sh.batch;
    p.a.batch_stride = (sh.a_col ? sh.m + sh.a_pad : sh.m) * sh.k;
    p.b.batch_stride = i % 2 ? 0 : sh.k * sh.n;
    p.c.batch_stride = p.d.batch_stride = sh.m * sh.n;
    p.epilogue.bias_batch_stride = i % 2 ? 0 : std::max(sh.m, sh.n);
  }
  return Canonicalize(p);
}

// Runs small_m configs directly (JitBackend), whatever the tuner would pick,
// on every shape with 16-byte and element-aligned pointers; `configs` gives
// the configs for a shape index and problem. Returns the number of runs.
int RunDirectSmallMConfigs(
    absl::Span<const DirectShape> shapes, uint64_t seed,
    const std::function<std::vector<jit::KernelConfig>(int, const GemmProblem&)>& configs) {
  auto api = jit::GetDriver();
  EXPECT_TRUE(api.ok()) << api.status();
  if (!api.ok()) return 0;
  auto device = jit::CurrentDevice(**api);
  EXPECT_TRUE(device.ok()) << device.status();
  if (!device.ok()) return 0;
  const jit::KernelFamily& small = jit::GetFamily(jit::Family::kSmallM);
  // Fewer stages where the ring and accumulators would not fit the registers
  // (as the family does).
  auto fitted = [&](const GemmProblem& p, jit::KernelConfig config) {
    while (config.stages > 1 && !small.Supports(p, config, device->target).ok()) {
      config.stages /= 2;
    }
    return config;
  };
  std::vector<CompileJob> jobs;
  for (int i = 0; i < static_cast<int>(shapes.size()); ++i) {
    const GemmProblem p = DirectProblem(shapes[i], i);
    for (const int alignment : {16, static_cast<int>(DataTypeSize(shapes[i].t))}) {
      for (const jit::KernelConfig& config : configs(i, p)) {
        jobs.push_back({p, fitted(p, config), alignment});
      }
    }
  }
  CompileInParallel(jobs, *device);
  std::mt19937_64 rng(seed);
  int ran = 0, failures = 0;
  for (int i = 0; i < static_cast<int>(shapes.size()); ++i) {
    Case c;
    c.problem = DirectProblem(shapes[i], i);
    const GemmProblem& p = c.problem;
    for (int misaligned = 0; misaligned < 2; ++misaligned) {
      c.options = Options();
      c.options.pointer_alignment = misaligned ? DataTypeSize(shapes[i].t) : 16;
      c.misalign = misaligned;
      for (const jit::KernelConfig& unfitted : configs(i, p)) {
        const jit::KernelConfig config = fitted(p, unfitted);
        const absl::Status supported = small.Supports(p, config, device->target);
        EXPECT_TRUE(supported.ok()) << config.ToString() << " " << supported;
        if (!supported.ok()) return ran;
        bool compiled = false;
        auto backend = JitBackend::Create(p, config, c.options, *device, &compiled);
        EXPECT_TRUE(backend.ok()) << backend.status();
        if (!backend.ok()) return ran;
        const std::string err = RunCase(
            c, p, [&](const GemmPointers& ptrs) { return (*backend)->Run(ptrs, nullptr); }, rng);
        ++ran;
        if (!err.empty()) {
          ++failures;
          ADD_FAILURE() << "shape " << i << " misaligned=" << misaligned << " "
                        << (*backend)->Describe() << ": " << err;
          if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
            return ran;
          }
        }
      }
    }
  }
  EXPECT_EQ(failures, 0);
  return ran;
}

// A small_m config for the direct tests (one warp column).
jit::KernelConfig SmallMConfig(int block_m, int block_n, int block_k, int warps_m, int stages) {
  jit::KernelConfig config;
  config.family = jit::Family::kSmallM;
  config.block_m = block_m;
  config.block_n = block_n;
  config.block_k = block_k;
  config.warps_m = warps_m;
  config.warps_n = 1;
  config.stages = stages;
  return config;
}

// The small_m wgmma configs (sm_90a): partial N tiles, K not a multiple of the
// stage depth, run-time and exact M, batches with strides, fp16 and bf16,
// every epilogue, and pointers below 16-byte alignment (the kernel then takes
// its register-ring path).
TEST(RandomProblemsTest, SmallMWgmmaConfigsMatchFloat64Reference) {
  JITGEMM_REQUIRE_GPU();
  CUDA_OK(cudaFree(nullptr));
  int major = 0;
  CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  if (major != 9) GTEST_SKIP() << "wgmma configs are for sm_90a";
  const DirectShape shapes[] = {
      {64, 2048, 4096, DataType::kBF16, 1}, {33, 300, 1000, DataType::kF16, 1},
      {48, 1000, 520, DataType::kBF16, 3},  {5, 96, 4104, DataType::kF16, 1},
      {64, 24, 64, DataType::kBF16, 2},     {17, 2056, 2048, DataType::kBF16, 1}};
  const int ran = RunDirectSmallMConfigs(
      shapes, EnvInt("JITGEMM_TEST_SEED", 20261121) + 5, [](int i, const GemmProblem&) {
        std::vector<jit::KernelConfig> out;
        for (auto [bn, stages, bk] :
             {std::array<int, 3>{16, 8, 128}, {16, 5, 256}, {32, 6, 128}, {32, 4, 64}}) {
          jit::KernelConfig config = SmallMConfig(64, bn, bk, 4, stages);
          config.runtime_m = i % 2 == 0;
          config.pdl = i % 3 != 0;
          out.push_back(config);
        }
        return out;
      });
  std::printf("small_m wgmma configs: %d runs\n", ran);
}

// small_m with the split_k CTAs of an n tile in one cluster, ranks 1.. pushing
// their tiles into rank 0: with and without early weights, 2, 3, 4 and 8 CTAs
// a cluster, on partial n tiles, odd M and K (the x ring instead of bulk x),
// batches, every epilogue and misaligned pointers.
TEST(RandomProblemsTest, SmallMClusterKConfigsMatchFloat64Reference) {
  JITGEMM_REQUIRE_GPU();
  CUDA_OK(cudaFree(nullptr));
  int major = 0;
  CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  if (major < 9) GTEST_SKIP() << "thread-block clusters need sm_90";
  const DirectShape shapes[] = {
      {16, 2048, 4096, DataType::kBF16, 1}, {13, 1000, 2048, DataType::kF16, 1},
      {1, 96, 512, DataType::kBF16, 1},     {29, 300, 1000, DataType::kBF16, 2},
      {9, 64, 4104, DataType::kF16, 1},     {32, 520, 777, DataType::kBF16, 1}};
  const int ran = RunDirectSmallMConfigs(
      shapes, EnvInt("JITGEMM_TEST_SEED", 20261122) + 7, [](int i, const GemmProblem& p) {
        std::vector<jit::KernelConfig> out;
        // {block_n, warps_m, stages, split_k, early weights with bulk x}
        for (auto [bn, wk, stages, split, early] : {std::array<int, 5>{32, 8, 8, 2, 1},
                                                    {32, 8, 4, 2, 0},
                                                    {64, 8, 4, 4, 1},
                                                    {32, 4, 4, 2, 0},
                                                    {16, 4, 4, 8, 0},
                                                    {48, 8, 8, 3, 1}}) {
          const int bm = p.m <= 8 ? 8 : p.m <= 16 ? 16 : 32;
          jit::KernelConfig config = SmallMConfig(bm, bn, 32, wk, stages);
          config.split_k = split;
          config.cluster_k = true;
          config.runtime_m = i % 2 == 0;
          config.pdl = i % 3 != 0 || early;
          config.early_b = early;
          config.x_copy = early;
          out.push_back(config);
        }
        return out;
      });
  std::printf("small_m cluster_k configs: %d runs\n", ran);
}

// small_m kernels with bulk x: early weights (constant_b) with x in two pieces
// along K, each warp's chunks split between them (the family's default
// there), alone and multicast to CTA pairs, and bulk x alone with the weights
// loaded after the wait (M = 5..8 without the promise); exact and run-time M.
// Shapes whose chunks do not split evenly, partial tile pairs, batches and
// misaligned pointers take the other x paths of the same configs.
TEST(RandomProblemsTest, SmallMEarlyBulkConfigsMatchFloat64Reference) {
  JITGEMM_REQUIRE_GPU();
  CUDA_OK(cudaFree(nullptr));
  int major = 0;
  CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  if (major < 9) GTEST_SKIP() << "bulk copies and PDL need sm_90";
  const DirectShape shapes[] = {
      {1, 2048, 4096, DataType::kBF16, 1}, {8, 1000, 2048, DataType::kF16, 1},
      {13, 256, 1024, DataType::kBF16, 1}, {16, 512, 512, DataType::kBF16, 1},
      {5, 96, 4096, DataType::kF16, 2},    {3, 64, 768, DataType::kBF16, 1}};
  const int ran = RunDirectSmallMConfigs(
      shapes, EnvInt("JITGEMM_TEST_SEED", 20261122) + 11, [](int i, const GemmProblem& p) {
        std::vector<jit::KernelConfig> out;
        // {x_copy, early weights}; the last: weights after the wait.
        for (auto [x_copy, early] : {std::array<int, 2>{1, 1}, {2, 1}, {1, 0}}) {
          jit::KernelConfig config = SmallMConfig(p.m <= 8 ? 8 : 16, 16, 32, 8, 16);
          config.runtime_m = i % 2 == 0;
          config.pdl = true;
          config.early_b = early;
          config.x_copy = x_copy;
          out.push_back(config);
        }
        return out;
      });
  std::printf("small_m bulk-x configs: %d runs\n", ran);
}

// small_m with a column-major A: with 8-element columns and at most 8 rows
// x streams through the ring transposed (M 1, 5 and 8, batches); otherwise
// the CTA stages its slice element by element before its main loop (M from
// 1 to 40, leading dimensions M and M plus a pad). K not a multiple of the
// chunk, split-K through the workspace, every epilogue and misaligned
// pointers.
TEST(RandomProblemsTest, SmallMColumnMajorAConfigsMatchFloat64Reference) {
  JITGEMM_REQUIRE_GPU();
  const DirectShape shapes[] = {
      {1, 2048, 4096, DataType::kBF16, 1, true, 0}, {5, 1000, 2050, DataType::kF16, 1, true, 3},
      {16, 512, 1024, DataType::kBF16, 2, true, 0}, {24, 300, 777, DataType::kBF16, 1, true, 8},
      {13, 96, 4104, DataType::kF16, 3, true, 1},   {40, 256, 512, DataType::kBF16, 1, true, 0},
      {8, 200, 1000, DataType::kBF16, 2, true, 0},  {1, 333, 4104, DataType::kF16, 1, true, 7}};
  const int ran = RunDirectSmallMConfigs(
      shapes, EnvInt("JITGEMM_TEST_SEED", 20261128) + 13, [](int i, const GemmProblem& p) {
        std::vector<jit::KernelConfig> out;
        // {block_n, warps_m, stages, split_k}
        for (auto [bn, wk, stages, split] :
             {std::array<int, 4>{32, 4, 4, 1}, {64, 8, 4, 1}, {16, 4, 8, 2}, {32, 8, 4, 4}}) {
          jit::KernelConfig config =
              SmallMConfig(static_cast<int>((p.m + 7) / 8 * 8), bn, 32, wk, stages);
          config.split_k = split;
          config.runtime_m = i % 2 == 0;
          config.pdl = i % 3 != 0;
          out.push_back(config);
        }
        return out;
      });
  std::printf("small_m column-major A configs: %d runs\n", ran);
}

}  // namespace
}  // namespace jitgemm::support
