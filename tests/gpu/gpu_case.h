// One GPU test case: a problem with its options, run on fresh operands with D
// poisoned, and D checked against the float64 reference.
#ifndef JITGEMM_TESTS_GPU_GPU_CASE_H_
#define JITGEMM_TESTS_GPU_GPU_CASE_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "backends/jit_backend.h"
#include "core/problem_signature.h"
#include "gtest/gtest.h"
#include "jit/driver_api.h"
#include "jit/family.h"
#include "jit/kernel_config.h"
#include "jit/kernel_store.h"
#include "jit/launcher.h"
#include "jit/specializer.h"
#include "jitgemm/plan.h"
#include "support/gpu_env.h"
#include "support/reference.h"

namespace jitgemm::support {

// One of `values`, uniformly: the random problem generators' draw.
template <class T>
T Pick(std::mt19937_64& rng, std::initializer_list<T> values) {
  std::uniform_int_distribution<size_t> d(0, values.size() - 1);
  return *(values.begin() + d(rng));
}

// Seed 001's grouped layout for a gated problem of `groups` batches: x
// (rows, G, K) -> h (rows, G, N), one [W_gate | W_up] per group.
inline void GroupGated(int64_t groups, GemmProblem& p) {
  const DataType in = p.a.type;
  p.batch_count = groups;
  p.a = {in, Layout::kRowMajor, groups * p.k, p.k};
  p.b = {in, p.b.layout, p.b.layout == Layout::kRowMajor ? 2 * p.n : p.k, p.k * 2 * p.n};
  p.d = {p.d.type, Layout::kRowMajor, groups * p.n, p.n};
  p.epilogue.bias_batch_stride = p.epilogue.bias == BiasMode::kPerColumn ? 2 * p.n : 0;
}

// The operands' strides of a random gated problem (B of 2N columns) whose
// sizes, types and layouts are drawn: leading dimensions padded by one of
// `pads`; then by `index`, strided batches (A or B sometimes broadcast) at
// index % 4 == 1 and seed 001's grouped layout, x (rows, G, K) -> h (rows,
// G, N), at index % 4 == 3. C takes D's layout.
inline void DrawGatedStrides(std::mt19937_64& rng, int index, std::initializer_list<int64_t> pads,
                             GemmProblem& p) {
  auto pad = [&](Operand& op, int64_t rows, int64_t cols) {
    op.ld = (op.layout == Layout::kRowMajor ? cols : rows) + Pick<int64_t>(rng, pads);
  };
  pad(p.a, p.m, p.k);
  pad(p.b, p.k, 2 * p.n);
  pad(p.d, p.m, p.n);
  auto extent = [](const Operand& op, int64_t rows, int64_t cols) {
    return (op.layout == Layout::kRowMajor ? rows : cols) * op.ld;
  };
  if (index % 4 == 1) {
    p.batch_count = Pick<int64_t>(rng, {2, 3, 5});
    p.a.batch_stride = Pick<int64_t>(rng, {0, 1, 1}) * extent(p.a, p.m, p.k);
    p.b.batch_stride = Pick<int64_t>(rng, {0, 1, 1}) * extent(p.b, p.k, 2 * p.n);
    p.d.batch_stride = extent(p.d, p.m, p.n) + Pick<int64_t>(rng, {0, 8});
    p.epilogue.bias_batch_stride = Pick<int64_t>(rng, {0, 2 * p.n, 2 * p.n + 8});
  } else if (index % 4 == 3) {
    GroupGated(Pick<int64_t>(rng, {2, 3, 5}), p);
  }
  p.c = p.d;
}

struct Case {
  GemmProblem problem;
  Options options;
  bool misalign = false;  // pointers only element-aligned (3 elements past an aligned base)
  std::string tag;
};

// An integer from the environment (a seed, a count), or `fallback`.
inline int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

inline double Tolerance(const GemmProblem& p) {
  if (p.a.type == DataType::kF32) return 2e-5;
  if (p.d.type == DataType::kBF16) return 1.6e-2;
  if (p.d.type == DataType::kF16) return 4e-3;
  return 1e-3;
}

// A kernel a test will create: JitBackend::Create specialises (problem,
// config) for the options' pointer alignment.
struct CompileJob {
  GemmProblem problem;
  jit::KernelConfig config;
  int pointer_alignment = Options().pointer_alignment;
};

// Compiles the kernels of `jobs` into the process's kernel store on every
// core, so that a test's serial loop of Create and run finds each one
// compiled. Unsupported configs are skipped and failures left for Create to
// report.
inline void CompileInParallel(const std::vector<CompileJob>& jobs,
                              const jit::DeviceContext& device) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  const unsigned threads = std::max(2u, std::thread::hardware_concurrency());
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (size_t i = next++; i < jobs.size(); i = next++) {
        const CompileJob& job = jobs[i];
        if (!jit::GetFamily(job.config.family)
                 .Supports(job.problem, job.config, device.target)
                 .ok()) {
          continue;
        }
        const jit::KernelSource source =
            jit::SpecializeFor(job.problem, job.config, device.target, job.pointer_alignment);
        (void)jit::KernelStore::Global().GetBinary(source, device.arch);
      }
    });
  }
  for (auto& w : workers) w.join();
}

// Runs one case; returns an empty string on success, else what went wrong.
// Runs `run` on fresh operands (D poisoned) and checks D against float64.
inline std::string RunCase(const Case& c, const GemmProblem& p,
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
      b.Allocate(span(p.b, p.k, BColumns(p)), offset(p.b.type)) != cudaSuccess ||
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
    // A gated problem's bias has an entry per column of B: 2N.
    const int64_t len = p.epilogue.bias == BiasMode::kPerColumn ? BColumns(p) : p.m;
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

// Reports a case that failed with `err` (run through `via`); false when the
// CUDA context is broken afterwards and the test must stop.
inline bool ReportCaseFailure(const Case& c, const GemmProblem& p, const std::string& via,
                              const std::string& err) {
  ADD_FAILURE() << c.tag << " " << DebugString(p) << " align " << c.options.pointer_alignment
                << " via " << via << ": " << err;
  if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    ADD_FAILURE() << "the context is broken after that kernel; stopping";
    return false;
  }
  return true;
}

inline std::string RunCase(const Case& c, const Plan& plan, std::mt19937_64& rng) {
  return RunCase(
      c, plan.problem(), [&](const GemmPointers& ptrs) { return plan.Run(ptrs, nullptr); }, rng);
}

// What RunJobs saw.
struct JobsRun {
  int ran = 0, failures = 0, splits = 0, early = 0;
  std::set<std::string> configs;
};

// Compiles every job at once, then runs case i through job i's config against
// float64, operands from `data_rng`. Each failure is reported as it comes;
// the run stops where the context is broken.
inline JobsRun RunJobs(const std::vector<Case>& cases, const std::vector<CompileJob>& jobs,
                       const jit::DeviceContext& device, std::mt19937_64& data_rng) {
  CompileInParallel(jobs, device);
  JobsRun r;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const GemmProblem& p = c.problem;
    const jit::KernelConfig& config = jobs[i].config;
    bool compiled = false;
    auto backend = JitBackend::Create(p, config, c.options, device, &compiled);
    if (!backend.ok()) {
      ++r.failures;
      ADD_FAILURE() << config.ToString() << ": " << backend.status();
      continue;
    }
    r.configs.insert(config.ToString());
    r.splits += config.split_k > 1;
    r.early += config.early_b;
    const std::string err = RunCase(
        c, p, [&](const GemmPointers& ptrs) { return (*backend)->Run(ptrs, nullptr); }, data_rng);
    ++r.ran;
    if (!err.empty()) {
      ++r.failures;
      if (!ReportCaseFailure(c, p, (*backend)->Describe(), err)) break;
    }
  }
  return r;
}

// A fixture for tests that launch kernels: skips with the reason where there
// is no GPU; `device_` is the current device.
class GpuDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JITGEMM_REQUIRE_GPU();
    auto api = jit::GetDriver();
    ASSERT_TRUE(api.ok()) << api.status();
    auto device = jit::CurrentDevice(**api);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = *device;
  }

  jit::DeviceContext device_;
};

// The same for tests of sm_90 kernels: skips also where the GPU is not an
// sm_90 one.
class Sm90GpuTest : public GpuDeviceTest {
 protected:
  void SetUp() override {
    GpuDeviceTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (device_.target.sm != 90) GTEST_SKIP() << "needs an sm_90 GPU";
  }
};

}  // namespace jitgemm::support

#endif  // JITGEMM_TESTS_GPU_GPU_CASE_H_
