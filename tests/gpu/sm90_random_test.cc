// The sm90 (TMA + wgmma) family on random problems against float64: every
// config it can propose, every epilogue, both layouts of each operand,
// batched (strided, broadcast) and seed 001's grouped layout, shapes off the
// tile and K not a multiple of 64; and gated problems ([gate | up] halves of
// B, every activation, odd N) in a test of their own.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "backends/jit_backend.h"
#include "core/problem_signature.h"
#include "gtest/gtest.h"
#include "jit/families/sm90.h"
#include "jit/family.h"
#include "tests/gpu/gpu_case.h"
#include "tests/gpu/sm90_case.h"

namespace jitgemm::support {
namespace {

int64_t RoundUp8(int64_t x) { return (x + 7) / 8 * 8; }

GemmProblem RandomProblem(std::mt19937_64& rng, int index, bool gated) {
  GemmProblem p;
  const DataType in = Pick(rng, {DataType::kF16, DataType::kBF16});
  p.m = Pick<int64_t>(rng, {65, 96, 127, 128, 129, 200, 256, 257, 333, 384, 511, 640});
  p.n = Pick<int64_t>(rng, {8, 24, 64, 100, 128, 136, 250, 256, 264, 300, 512, 520});
  p.k = Pick<int64_t>(rng, {8, 16, 40, 64, 72, 128, 200, 256, 328, 512, 1000, 1024});
  p.a.type = p.b.type = in;
  p.d.type = Pick(rng, {in, in, in, DataType::kF32});
  p.c.type = Pick(rng, {in, DataType::kF32});
  p.a.layout = Pick(rng, {Layout::kRowMajor, Layout::kRowMajor, Layout::kColMajor});
  p.b.layout = Pick(rng, {Layout::kRowMajor, Layout::kColMajor});
  p.c.layout = Pick(rng, {Layout::kRowMajor, Layout::kColMajor});
  p.d.layout =
      Pick(rng, {Layout::kRowMajor, Layout::kRowMajor, Layout::kRowMajor, Layout::kColMajor});
  // A and B rows 16-byte aligned (TMA); C and D anything, D often aligned too.
  auto lines = [](const Operand& op, int64_t rows, int64_t cols) {
    return op.layout == Layout::kRowMajor ? cols : rows;
  };
  p.a.ld = RoundUp8(lines(p.a, p.m, p.k)) + Pick<int64_t>(rng, {0, 0, 8, 24});
  p.b.ld = RoundUp8(lines(p.b, p.k, p.n)) + Pick<int64_t>(rng, {0, 0, 8});
  p.c.ld = lines(p.c, p.m, p.n) + Pick<int64_t>(rng, {0, 1, 8});
  p.d.ld = Pick<int64_t>(rng, {0, 0, 1}) == 0
               ? RoundUp8(lines(p.d, p.m, p.n)) + Pick<int64_t>(rng, {0, 8})
               : lines(p.d, p.m, p.n) + 1;
  p.epilogue.alpha = Pick(rng, {1.f, 1.f, 0.5f, -1.25f});
  p.epilogue.beta = Pick(rng, {0.f, 0.f, 1.f, 0.75f});
  p.epilogue.bias = Pick(rng, {BiasMode::kNone, BiasMode::kPerColumn, BiasMode::kPerRow});
  p.epilogue.activation = Pick(rng, {Activation::kNone, Activation::kRelu, Activation::kGeluTanh,
                                     Activation::kGeluErf, Activation::kSilu});
  if (gated) {
    p.epilogue.gate = Gate::kHalves;
    p.epilogue.beta = 0.f;
    p.epilogue.bias = Pick(rng, {BiasMode::kNone, BiasMode::kPerColumn});
    // Odd N where B is K-major; a row-major B's up half must start 16-byte
    // aligned (the family refuses other N, and cuBLAS serves them).
    p.n = p.b.layout == Layout::kColMajor ? Pick<int64_t>(rng, {p.n, p.n, p.n + 1, p.n + 3})
                                          : RoundUp8(p.n);
    p.d.ld = Pick<int64_t>(rng, {0, 0, 1}) == 0
                 ? RoundUp8(lines(p.d, p.m, p.n)) + Pick<int64_t>(rng, {0, 8})
                 : lines(p.d, p.m, p.n) + 1;
    p.b.ld = RoundUp8(lines(p.b, p.k, BColumns(p))) + Pick<int64_t>(rng, {0, 0, 8});
  }
  if (index % 4 == 1) {  // strided batches, A or B sometimes broadcast
    p.batch_count = Pick<int64_t>(rng, {2, 3, 5});
    auto extent = [&](const Operand& op, int64_t rows, int64_t cols) {
      return (op.layout == Layout::kRowMajor ? rows : cols) * op.ld;
    };
    p.a.batch_stride = Pick<int64_t>(rng, {0, 1, 1}) * extent(p.a, p.m, p.k);
    p.b.batch_stride = Pick<int64_t>(rng, {0, 1, 1}) * extent(p.b, p.k, BColumns(p));
    p.c.batch_stride = extent(p.c, p.m, p.n);
    p.d.batch_stride = extent(p.d, p.m, p.n);
    p.epilogue.bias_batch_stride = Pick<int64_t>(rng, {0, std::max(p.m, BColumns(p))});
  } else if (index % 4 == 3) {  // seed 001: x (rows, G, din) -> y (rows, G, dout)
    const int64_t groups = Pick<int64_t>(rng, {2, 3, 4});
    const int64_t din = RoundUp8(p.k), dout = RoundUp8(p.n);
    p.k = din;
    p.n = dout;
    p.batch_count = groups;
    p.a = {in, Layout::kRowMajor, groups * din, din};
    const int64_t bcols = p.epilogue.gate == Gate::kHalves ? 2 * dout : dout;
    p.b = {in, p.b.layout, p.b.layout == Layout::kRowMajor ? bcols : din, din * bcols};
    p.d = {p.d.type, Layout::kRowMajor, groups * dout, dout};
    p.c = p.d;
    p.epilogue.bias_batch_stride = p.epilogue.bias == BiasMode::kPerColumn ? bcols : 0;
  }
  return Canonicalize(p);
}

// `env` names the variable that overrides `count`.
void RunRandomProblems(const jit::DeviceContext& device_context, bool gated, const char* env,
                       int count, int at_least) {
  const jit::DeviceContext* device = &device_context;
  const jit::KernelFamily& family = jit::GetFamily(jit::Family::kSm90);
  count = EnvInt(env, count);
  // Problems and operands draw from separate generators, so that every
  // problem is known before the first runs and all compile at once.
  std::mt19937_64 rng(gated ? 20261125 : 20261124);
  std::mt19937_64 data_rng(gated ? 20261205 : 20261204);
  std::vector<CompileJob> jobs;
  for (int i = 0; i < count; ++i) {
    const GemmProblem p = RandomProblem(rng, i, gated);
    ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
    const auto all = family.Candidates(p, device->target, TuningPolicy::kExhaustive);
    if (all.empty()) {
      ADD_FAILURE() << "#" << i << " " << DebugString(p) << ": no sm90 config";
      continue;
    }
    jit::KernelConfig config = all[static_cast<size_t>(i) % all.size()];
    config.pdl = i % 2 == 0;
    jobs.push_back({p, config});
  }
  CompileInParallel(jobs, *device);
  int ran = 0, failures = 0, gated_run = 0;
  std::set<std::string> configs;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const GemmProblem& p = jobs[i].problem;
    const jit::KernelConfig& config = jobs[i].config;
    Options options;
    bool compiled = false;
    auto backend = JitBackend::Create(p, config, options, *device, &compiled);
    ASSERT_TRUE(backend.ok()) << config.ToString() << ": " << backend.status();
    configs.insert(config.ToString());
    if (p.epilogue.gate != Gate::kNone) ++gated_run;
    const std::string err = RunOne(p, **backend, data_rng);
    ++ran;
    if (!err.empty()) {
      ++failures;
      ADD_FAILURE() << "#" << i << " " << DebugString(p) << " " << (*backend)->Describe() << ": "
                    << err;
      if (cudaGetLastError() != cudaSuccess) break;
    }
  }
  std::printf("sm90 random problems: %d run (%d gated), %d failures, %zu configs\n", ran, gated_run,
              failures, configs.size());
  EXPECT_EQ(failures, 0);
  EXPECT_GE(ran, std::min(count, at_least));
}

TEST_F(Sm90FamilyGpuTest, RandomProblemsMatchFloat64Reference) {
  RunRandomProblems(device_, /*gated=*/false, "JITGEMM_SM90_PROBLEMS", 320, 300);
}

TEST_F(Sm90FamilyGpuTest, RandomGatedProblemsMatchFloat64Reference) {
  RunRandomProblems(device_, /*gated=*/true, "JITGEMM_SM90_GATED_PROBLEMS", 120, 100);
}

}  // namespace
}  // namespace jitgemm::support
