// RELIABILITY item 18 / issue "JIT pipeline": hundreds of random problems
// through Plan against a float64 reference, outputs poisoned with NaN first.
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

namespace jitgemm::support {
namespace {

struct Case {
  GemmProblem problem;
  Options options;
  bool misalign = false;  // pointers only element-aligned (3 elements past an aligned base)
  std::string tag;
};

int64_t PickSize(std::mt19937_64& rng, bool small) {
  static const int64_t kSizes[] = {1,  2,  3,  5,  7,   8,   13,  16,  17,  31,  32,  37,  48, 63,
                                   64, 65, 96, 97, 127, 128, 129, 191, 256, 257, 320, 383, 512};
  std::uniform_int_distribution<int> pick(0, small ? 17 : static_cast<int>(std::size(kSizes)) - 1);
  return kSizes[pick(rng)];
}

template <class T>
T Pick(std::mt19937_64& rng, std::initializer_list<T> values) {
  std::uniform_int_distribution<size_t> d(0, values.size() - 1);
  return *(values.begin() + d(rng));
}

Case RandomCase(std::mt19937_64& rng, int index) {
  Case c;
  GemmProblem& p = c.problem;
  const DataType in = Pick(rng, {DataType::kF16, DataType::kBF16, DataType::kF32});
  const bool small_m = index % 4 == 0;  // a quarter exercise the M <= 64 paths
  p.m = small_m ? Pick<int64_t>(rng, {1, 2, 3, 4, 7, 8, 15, 16, 31, 33, 64}) : PickSize(rng, false);
  p.n = PickSize(rng, false);
  p.k =
      index % 7 == 0 ? Pick<int64_t>(rng, {1, 2, 3, 1023, 1031, 2048, 4097}) : PickSize(rng, false);
  p.a.type = p.b.type = in;
  p.d.type = in == DataType::kF32 ? DataType::kF32 : Pick(rng, {in, in, DataType::kF32});
  p.c.type = in == DataType::kF32 ? DataType::kF32 : Pick(rng, {in, DataType::kF32});
  for (Operand* op : {&p.a, &p.b, &p.c, &p.d}) {
    op->layout = Pick(rng, {Layout::kRowMajor, Layout::kColMajor});
  }
  if (small_m) {  // the decode shape: x row-major, W (N, K) row-major = B col-major
    p.a.layout = Pick(rng, {Layout::kRowMajor, Layout::kRowMajor, Layout::kColMajor});
    p.b.layout = Pick(rng, {Layout::kColMajor, Layout::kColMajor, Layout::kRowMajor});
  }
  auto pad = [&](Operand& op, int64_t rows, int64_t cols) {
    const int64_t packed = op.layout == Layout::kRowMajor ? cols : rows;
    op.ld = packed + Pick<int64_t>(rng, {0, 0, 0, 1, 8, 24});
  };
  pad(p.a, p.m, p.k);
  pad(p.b, p.k, p.n);
  pad(p.c, p.m, p.n);
  pad(p.d, p.m, p.n);
  p.epilogue.alpha = Pick(rng, {1.f, 1.f, 0.5f, -1.25f});
  p.epilogue.beta = Pick(rng, {0.f, 0.f, 1.f, 0.75f});
  p.epilogue.bias = Pick(rng, {BiasMode::kNone, BiasMode::kPerColumn, BiasMode::kPerRow});
  p.epilogue.activation = Pick(rng, {Activation::kNone, Activation::kRelu, Activation::kGeluTanh,
                                     Activation::kGeluErf, Activation::kSilu});
  if (index % 5 == 1) {
    p.batch_count = Pick<int64_t>(rng, {2, 3, 5});
    auto extent = [](const Operand& op, int64_t rows, int64_t cols) {
      return (op.layout == Layout::kRowMajor ? rows : cols) * op.ld;
    };
    p.a.batch_stride = Pick<int64_t>(rng, {0, 1}) * extent(p.a, p.m, p.k);
    p.b.batch_stride = Pick<int64_t>(rng, {0, 1}) * extent(p.b, p.k, p.n);
    p.c.batch_stride = Pick<int64_t>(rng, {0, 1}) * extent(p.c, p.m, p.n);
    p.d.batch_stride = extent(p.d, p.m, p.n);
    p.epilogue.bias_batch_stride = Pick<int64_t>(rng, {0, p.n > p.m ? p.n : p.m});
  }
  c.options.backend = BackendPolicy::kJitOnly;
  c.options.tuning = TuningPolicy::kHeuristic;
  // Early weight reads, bulk and multicast x where the shape allows them.
  c.options.constant_b = index % 3 == 1;
  if (index % 11 == 3) {
    // Pointers that are only element-aligned.
    c.options.pointer_alignment = DataTypeSize(in);
    c.misalign = true;
  }
  c.tag = absl::StrCat("#", index);
  return c;
}

// Seed 001's grouped layout: x (B, G, Din) -> y (B, G, Dout), one weight per group.
Case GroupedCase(int64_t rows, int64_t groups, int64_t din, int64_t dout, bool bias) {
  Case c;
  GemmProblem& p = c.problem;
  p.m = rows;
  p.n = dout;
  p.k = din;
  p.batch_count = groups;
  p.a = {DataType::kBF16, Layout::kRowMajor, groups * din, din};
  p.b = {DataType::kBF16, Layout::kColMajor, din, din * dout};
  p.c = p.d = {DataType::kBF16, Layout::kRowMajor, groups * dout, dout};
  if (bias) {
    p.epilogue.bias = BiasMode::kPerColumn;
    p.epilogue.bias_batch_stride = dout;
    p.epilogue.activation = Activation::kSilu;
  }
  c.options.backend = BackendPolicy::kJitOnly;
  c.tag = absl::StrCat("grouped ", rows, "x", groups, "x", din, "->", dout);
  return c;
}

double Tolerance(const GemmProblem& p) {
  if (p.a.type == DataType::kF32) return 2e-5;
  if (p.d.type == DataType::kBF16) return 1.6e-2;
  if (p.d.type == DataType::kF16) return 4e-3;
  return 1e-3;
}

// Runs one case; returns an empty string on success, else what went wrong.
// Runs `run` on fresh operands (D poisoned) and checks D against float64.
std::string RunCase(const Case& c, const GemmProblem& p,
                    const std::function<absl::Status(const GemmPointers&)>& run,
                    std::mt19937_64& rng) {
  const int64_t batch = p.batch_count;
  Buffer a, b, cbuf, d, bias;
  auto span = [&](const Operand& op, int64_t r, int64_t cols) {
    return static_cast<size_t>(OperandSpanBytes(op, r, cols, batch));
  };
  auto offset = [&](DataType t) { return c.misalign ? 3 * DataTypeSize(t) : 0; };
  const bool uses_c = p.epilogue.beta != 0.f;
  const bool uses_bias = p.epilogue.bias != BiasMode::kNone;
  if (a.Allocate(span(p.a, p.m, p.k), offset(p.a.type)) != cudaSuccess ||
      b.Allocate(span(p.b, p.k, p.n), offset(p.b.type)) != cudaSuccess ||
      d.Allocate(span(p.d, p.m, p.n), offset(p.d.type)) != cudaSuccess) {
    return "cudaMalloc failed";
  }
  a.FillRandom(p.a.type, rng);
  b.FillRandom(p.b.type, rng);
  if (uses_c) {
    cbuf.Allocate(span(p.c, p.m, p.n), offset(p.c.type));
    cbuf.FillRandom(p.c.type, rng);
    cbuf.Upload();
  }
  if (uses_bias) {
    const int64_t len = p.epilogue.bias == BiasMode::kPerColumn ? p.n : p.m;
    const int64_t elems = len + (batch - 1) * p.epilogue.bias_batch_stride;
    bias.Allocate(elems * DataTypeSize(p.d.type), offset(p.d.type));
    bias.FillRandom(p.d.type, rng);
    bias.Upload();
  }
  a.Upload();
  b.Upload();
  d.Poison();
  absl::Status s = run({a.device, b.device, uses_c ? cbuf.device : nullptr, d.device,
                        uses_bias ? bias.device : nullptr});
  if (!s.ok()) return absl::StrCat("Run: ", s.ToString());
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return absl::StrCat("kernel failed: ", cudaGetErrorString(e));
  d.Download();
  const auto ref =
      ReferenceGemm(p, a.host.data(), b.host.data(), cbuf.host.data(), bias.host.data());
  const double err = RelativeError(p, d.host.data(), ref);
  if (!(err <= Tolerance(p))) {
    // Say where: the first element that is not finite or far off.
    std::string where;
    int shown = 0;
    for (int64_t bb = 0; bb < batch && shown < 4; ++bb) {
      for (int64_t i = 0; i < p.m && shown < 4; ++i) {
        for (int64_t j = 0; j < p.n && shown < 4; ++j) {
          const double got = LoadAs(p.d.type, d.host.data(), ElementIndex(p.d, i, j, bb));
          const double want = ref[(bb * p.m + i) * p.n + j];
          if (!std::isfinite(got) || std::abs(got - want) > 0.1 + 0.1 * std::abs(want)) {
            absl::StrAppend(&where, " [b", bb, " i", i, " j", j, " got ", got, " want ", want, "]");
            ++shown;
          }
        }
      }
    }
    return absl::StrCat("relative error ", err, " > ", Tolerance(p), where);
  }
  // Elements between rows (ld padding) must stay poisoned: nothing wrote out of bounds.
  const int64_t es = DataTypeSize(p.d.type);
  const int64_t row_len = p.d.layout == Layout::kRowMajor ? p.n : p.m;
  const int64_t lines = p.d.layout == Layout::kRowMajor ? p.m : p.n;
  if (p.d.ld > row_len && batch == 1) {
    for (int64_t line = 0; line + 1 < lines; ++line) {
      for (int64_t x = row_len; x < p.d.ld; ++x) {
        const uint8_t* byte = d.host.data() + (line * p.d.ld + x) * es;
        for (int64_t q = 0; q < es; ++q) {
          if (byte[q] != 0xff) return absl::StrCat("wrote padding at line ", line, " col ", x);
        }
      }
    }
  }
  return "";
}

std::string RunCase(const Case& c, const Plan& plan, std::mt19937_64& rng) {
  return RunCase(
      c, plan.problem(), [&](const GemmPointers& ptrs) { return plan.Run(ptrs, nullptr); }, rng);
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

// Runs `plan` on inputs that are all NaN, many times, so the shared memory of
// every SM is left full of NaN bit patterns.
void PoisonSharedMemory(const Plan& plan, const Case& c) {
  const GemmProblem& p = plan.problem();
  const int64_t batch = p.batch_count;
  Buffer a, b, cbuf, d, bias;
  auto span = [&](const Operand& op, int64_t r, int64_t cols) {
    return static_cast<size_t>(OperandSpanBytes(op, r, cols, batch));
  };
  auto offset = [&](DataType t) { return c.misalign ? 3 * DataTypeSize(t) : 0; };
  a.Allocate(span(p.a, p.m, p.k), offset(p.a.type));
  b.Allocate(span(p.b, p.k, p.n), offset(p.b.type));
  d.Allocate(span(p.d, p.m, p.n), offset(p.d.type));
  cbuf.Allocate(span(p.c, p.m, p.n), offset(p.c.type));
  bias.Allocate((p.m + p.n) * batch * 4, offset(p.d.type));
  for (Buffer* x : {&a, &b, &cbuf, &bias}) x->Poison();
  for (int i = 0; i < 20; ++i) {
    (void)plan.Run({a.device, b.device, cbuf.device, d.device, bias.device}, nullptr);
  }
  cudaDeviceSynchronize();
}

// Cases that failed once, kept with variants that isolate the part at fault
// (operand loads, C, bias, store layout, alignment).
TEST(RandomProblemsTest, RegressionsAndTheirVariants) {
  JITGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(99);
  GemmProblem base;
  base.m = 257;
  base.n = 512;
  base.k = 191;
  // Random case #509 (seed 20261121) exactly.
  base.a = {DataType::kF16, Layout::kColMajor, 257, kNoStride};
  base.b = {DataType::kF16, Layout::kRowMajor, 512, kNoStride};
  base.c = {DataType::kF16, Layout::kRowMajor, 512, kNoStride};
  base.d = {DataType::kF16, Layout::kColMajor, 258, kNoStride};
  base.epilogue.beta = 0.75f;
  base.epilogue.bias = BiasMode::kPerRow;
  base.epilogue.activation = Activation::kGeluErf;
  struct Variant {
    const char* name;
    std::function<void(Case&)> change;
  };
  const std::vector<Variant> variants = {
      {"as found", [](Case&) {}},
      {"aligned pointers",
       [](Case& c) {
         c.misalign = false;
         c.options.pointer_alignment = 16;
       }},
      {"no beta", [](Case& c) { c.problem.epilogue.beta = 0; }},
      {"no bias", [](Case& c) { c.problem.epilogue.bias = BiasMode::kNone; }},
      {"row-major D",
       [](Case& c) {
         c.problem.d.layout = Layout::kRowMajor;
         c.problem.d.ld = 512;
       }},
      {"c like d", [](Case& c) { c.problem.c = c.problem.d; }},
      {"ldd 257", [](Case& c) { c.problem.d.ld = 257; }},
      {"c f32", [](Case& c) { c.problem.c.type = DataType::kF32; }},
      {"no activation", [](Case& c) { c.problem.epilogue.activation = Activation::kNone; }},
      {"row-major A",
       [](Case& c) {
         c.problem.a.layout = Layout::kRowMajor;
         c.problem.a.ld = 191;
       }},
      {"split-K 8 launch",
       [](Case& c) {
         c.problem = Canonicalize(MakeGemm(96, 256, 4097, DataType::kBF16));
         c.problem.b.layout = Layout::kColMajor;
         c.problem.b.ld = 4097;
         c.problem.epilogue.activation = Activation::kGeluTanh;
         c.problem.epilogue.alpha = -1.25f;
         c.misalign = false;
         c.options.pointer_alignment = 16;
       }},
  };
  int failures = 0;
  for (const Variant& v : variants) {
    Case c;
    c.problem = base;
    c.options.backend = BackendPolicy::kJitOnly;
    c.options.tuning = TuningPolicy::kHeuristic;
    c.options.pointer_alignment = 2;
    c.misalign = true;
    v.change(c);
    auto plan = Plan::Create(c.problem, c.options);
    ASSERT_TRUE(plan.ok()) << v.name << ": " << plan.status();
    // Leave NaN in every SM's shared memory first: a kernel that uses a
    // shared-memory element it did not write (or zero) then fails visibly.
    PoisonSharedMemory(*plan, c);
    const std::string err = RunCase(c, *plan, rng);
    std::printf("regression variant %-18s %-60s %s\n", v.name, plan->info().kernel_name.c_str(),
                err.empty() ? "ok" : err.c_str());
    if (!err.empty()) {
      ++failures;
      if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) break;
    }
  }
  EXPECT_EQ(failures, 0);
}

// A decode-style problem for the direct small_m config runs below: B
// column-major, and by index an f32 or 16-bit output, alpha, beta, a bias on
// either axis, an activation and, for batches, strides (B's and the bias's 0
// on odd indices).
struct DirectShape {
  int64_t m, n, k;
  DataType t;
  int64_t batch;
};
GemmProblem DirectProblem(const DirectShape& sh, int i) {
  GemmProblem p = MakeGemm(sh.m, sh.n, sh.k, sh.t);
  p.b.layout = Layout::kColMajor;
  p.d.type = i % 3 == 2 ? DataType::kF32 : sh.t;
  p.c.type = p.d.type;
  p.epilogue.alpha = i % 2 ? -1.25f : 1.f;
  p.epilogue.beta = i % 3 == 1 ? 0.75f : 0.f;
  p.epilogue.bias = i % 2 ? BiasMode::kPerColumn : BiasMode::kPerRow;
  p.epilogue.activation =
      i % 2 ? Activation::kGeluTanh : (i % 4 == 0 ? Activation::kSilu : Activation::kRelu);
  if (sh.batch > 1) {
    p.batch_count = sh.batch;
    p.a.batch_stride = sh.m * sh.k;
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
      for (jit::KernelConfig config : configs(i, p)) {
        // Fewer stages where the ring and accumulators would not fit the
        // registers (as the family does).
        while (config.stages > 1 && !small.Supports(p, config, device->target).ok()) {
          config.stages /= 2;
        }
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

TEST(RandomProblemsTest, MatchFloat64Reference) {
  JITGEMM_REQUIRE_GPU();
  const int count = EnvInt("JITGEMM_TEST_PROBLEMS", 520);
  std::mt19937_64 rng(EnvInt("JITGEMM_TEST_SEED", 20261121));
  std::vector<Case> cases;
  for (int i = 0; i < count; ++i) cases.push_back(RandomCase(rng, i));
  cases.push_back(GroupedCase(256, 12, 512, 768, false));
  cases.push_back(GroupedCase(96, 3, 72, 80, true));
  cases.push_back(GroupedCase(33, 5, 40, 24, false));

  // Plans compile in parallel (Plan::Create is thread-safe); runs are serial.
  CUDA_OK(cudaFree(nullptr));  // make the primary context current before the workers start
  std::vector<std::unique_ptr<absl::StatusOr<Plan>>> plans(cases.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  const int threads = std::max(2u, std::thread::hardware_concurrency());
  int device = 0;
  cudaGetDevice(&device);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      cudaSetDevice(device);
      for (size_t i = next++; i < cases.size(); i = next++) {
        plans[i] = std::make_unique<absl::StatusOr<Plan>>(
            Plan::Create(cases[i].problem, cases[i].options));
      }
    });
  }
  for (auto& w : workers) w.join();

  std::map<std::string, int> by_family;
  int failures = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& plan = *plans[i];
    if (!plan.ok()) {
      ADD_FAILURE() << cases[i].tag << " " << DebugString(cases[i].problem)
                    << ": Plan::Create: " << plan.status();
      ++failures;
      continue;
    }
    const std::string& name = plan->info().kernel_name;
    for (const char* tag : {"small_m", "sm80", "simt", "_earlyb", "_xc1", "_xc2"}) {
      if (name.find(tag) != std::string::npos) by_family[tag]++;
    }
    std::string err = RunCase(cases[i], *plan, rng);
    if (!err.empty()) {
      ++failures;
      ADD_FAILURE() << cases[i].tag << " " << DebugString(plan->problem()) << " align "
                    << cases[i].options.pointer_alignment << " via " << name << ": " << err
                    << "\n  exact problem: " << ProblemSignature(plan->problem());
      if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
        ADD_FAILURE() << "the context is broken after that kernel; stopping";
        break;
      }
    }
  }
  std::printf("random problems: %zu run, %d failed; kernels by family:", cases.size(), failures);
  for (const auto& [family, n] : by_family) std::printf(" %s=%d", family.c_str(), n);
  std::printf("\n");
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace jitgemm::support
