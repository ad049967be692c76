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
#include "tests/gpu/gpu_case.h"

namespace jitgemm::support {
namespace {

int64_t PickSize(std::mt19937_64& rng, bool small) {
  static const int64_t kSizes[] = {1,  2,  3,  5,  7,   8,   13,  16,  17,  31,  32,  37,  48, 63,
                                   64, 65, 96, 97, 127, 128, 129, 191, 256, 257, 320, 383, 512};
  std::uniform_int_distribution<int> pick(0, small ? 17 : static_cast<int>(std::size(kSizes)) - 1);
  return kSizes[pick(rng)];
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

// A gated problem (SwiGLU / GeGLU: B = [B_gate | B_up], D = act(gate) * up)
// planned with the backend on auto: the sm90 family or the cuBLAS route
// ([gate | up] product + gate pass), whichever the tuner picks.
Case GatedCase(std::mt19937_64& rng, int index) {
  Case c;
  GemmProblem& p = c.problem;
  const DataType in = Pick(rng, {DataType::kF16, DataType::kBF16, DataType::kBF16, DataType::kF32});
  p.m = Pick<int64_t>(rng, {1, 8, 33, 64, 128, 257, 512});
  p.n = Pick<int64_t>(rng, {17, 64, 100, 128, 255, 256, 384});
  p.k = Pick<int64_t>(rng, {16, 64, 200, 256, 1024});
  p.a.type = p.b.type = in;
  p.d.type = in == DataType::kF32 ? in : Pick(rng, {in, in, DataType::kF32});
  p.a.layout = Pick(rng, {Layout::kRowMajor, Layout::kRowMajor, Layout::kColMajor});
  p.b.layout = Pick(rng, {Layout::kRowMajor, Layout::kColMajor});
  p.d.layout = Pick(rng, {Layout::kRowMajor, Layout::kRowMajor, Layout::kColMajor});
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.activation = Pick(rng, {Activation::kNone, Activation::kRelu, Activation::kGeluTanh,
                                     Activation::kGeluErf, Activation::kSilu});
  p.epilogue.bias = Pick(rng, {BiasMode::kNone, BiasMode::kPerColumn});
  p.epilogue.alpha = Pick(rng, {1.f, 0.5f});
  if (index % 3 == 1) GroupGated(Pick<int64_t>(rng, {2, 3, 4}), p);  // seed 001's layout
  p.c = p.d;
  c.options.backend = BackendPolicy::kAuto;
  c.options.tuning = TuningPolicy::kHeuristic;
  c.tag = absl::StrCat("gated #", index);
  return c;
}

// No GPU needed: the gated cases are valid problems.
TEST(RandomProblemsTest, GatedCasesAreValid) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 200; ++i) {
    const Case c = GatedCase(rng, i);
    EXPECT_TRUE(ValidateProblem(c.problem).ok()) << c.tag << ": " << ValidateProblem(c.problem);
  }
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

TEST(RandomProblemsTest, MatchFloat64Reference) {
  JITGEMM_REQUIRE_GPU();
  const int count = EnvInt("JITGEMM_TEST_PROBLEMS", 520);
  std::mt19937_64 rng(EnvInt("JITGEMM_TEST_SEED", 20261121));
  std::vector<Case> cases;
  for (int i = 0; i < count; ++i) cases.push_back(RandomCase(rng, i));
  cases.push_back(GroupedCase(256, 12, 512, 768, false));
  cases.push_back(GroupedCase(96, 3, 72, 80, true));
  cases.push_back(GroupedCase(33, 5, 40, 24, false));
  const int gated = EnvInt("JITGEMM_TEST_GATED_PROBLEMS", 40);
  for (int i = 0; i < gated; ++i) cases.push_back(GatedCase(rng, i));

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
    for (const char* tag :
         {"small_m", "sm90", "sm80", "simt", "_earlyb", "_xc1", "_xc2", "_glu", "gemm_gate_"}) {
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
