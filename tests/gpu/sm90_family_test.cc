// The sm90 (TMA + wgmma) family on random problems against float64: every
// config it can propose, every epilogue, both layouts of each operand,
// batched (strided, broadcast) and seed 001's grouped layout, shapes off the
// tile and K not a multiple of 64; and gated problems ([gate | up] halves of
// B, every activation, odd N) in a test of their own; split-K of a last wave
// only. D is poisoned with NaN first and its row padding must stay untouched.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/jit_backend.h"
#include "core/problem_signature.h"
#include "gtest/gtest.h"
#include "jit/driver_api.h"
#include "jit/families/sm90.h"
#include "jit/family.h"
#include "jit/launcher.h"
#include "support/gpu_env.h"
#include "support/reference.h"
#include "tests/gpu/gpu_case.h"
#include "tests/jit/sm90_config.h"

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

double Tolerance(const GemmProblem& p) {
  if (p.d.type == DataType::kBF16) return 1.6e-2;
  if (p.d.type == DataType::kF16) return 4e-3;
  return 1e-3;
}

// A strided batch of packed m x n x k problems: bf16 or fp16 by the index's
// parity, with fp32 C and D at every fourth index.
GemmProblem StridedBatch(int64_t m, int64_t n, int64_t k, int64_t batch, int index) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch_count = batch;
  p.a.type = p.b.type = p.c.type = p.d.type = index % 2 ? DataType::kBF16 : DataType::kF16;
  if (index % 4 == 0) p.c.type = p.d.type = DataType::kF32;
  p.a.batch_stride = p.m * p.k;
  p.b.batch_stride = p.k * p.n;
  p.c.batch_stride = p.d.batch_stride = p.m * p.n;
  return p;
}

// Empty on success, else what went wrong. With `other`, launches `backend`
// and `other` in turn `pairs` times on the same operands, then checks D once.
std::string RunOne(const GemmProblem& p, const JitBackend& backend, std::mt19937_64& rng,
                   const JitBackend* other = nullptr, int pairs = 0) {
  const int64_t batch = p.batch_count;
  Buffer a, b, c, d, bias;
  auto span = [&](const Operand& op, int64_t r, int64_t cols) {
    return static_cast<size_t>(OperandSpanBytes(op, r, cols, batch));
  };
  const bool uses_c = p.epilogue.beta != 0.f, uses_bias = p.epilogue.bias != BiasMode::kNone;
  if (a.Allocate(span(p.a, p.m, p.k), 0) != cudaSuccess ||
      b.Allocate(span(p.b, p.k, BColumns(p)), 0) != cudaSuccess ||
      d.Allocate(span(p.d, p.m, p.n), 0) != cudaSuccess) {
    return "cudaMalloc failed";
  }
  a.FillRandom(p.a.type, rng);
  b.FillRandom(p.b.type, rng);
  a.Upload();
  b.Upload();
  if (uses_c) {
    c.Allocate(span(p.c, p.m, p.n), 0);
    c.FillRandom(p.c.type, rng);
    c.Upload();
  }
  if (uses_bias) {
    const int64_t len = p.epilogue.bias == BiasMode::kPerColumn ? BColumns(p) : p.m;
    bias.Allocate((len + (batch - 1) * p.epilogue.bias_batch_stride) * DataTypeSize(p.d.type), 0);
    bias.FillRandom(p.d.type, rng);
    bias.Upload();
  }
  d.Poison();
  const GemmPointers ptrs{a.device, b.device, uses_c ? c.device : nullptr, d.device,
                          uses_bias ? bias.device : nullptr};
  absl::Status s = backend.Run(ptrs, nullptr);
  for (int i = 0; i < pairs && other != nullptr && s.ok(); ++i) {
    s = other->Run(ptrs, nullptr);
    if (s.ok()) s = backend.Run(ptrs, nullptr);
  }
  if (!s.ok()) return absl::StrCat("Run: ", s.ToString());
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
    return absl::StrCat("kernel failed: ", cudaGetErrorString(e));
  }
  d.Download();
  const auto ref = ReferenceGemm(p, a.host.data(), b.host.data(), c.host.data(), bias.host.data());
  const double err = RelativeError(p, d.host.data(), ref);
  if (!(err <= Tolerance(p))) return absl::StrCat("relative error ", err);
  // Row padding of D (and, in the grouped layout, the other groups' columns
  // of a batch's rows are checked by the reference) must stay poisoned.
  if (batch == 1) {
    const int64_t es = DataTypeSize(p.d.type);
    const bool row = p.d.layout == Layout::kRowMajor;
    const int64_t len = row ? p.n : p.m, lines = row ? p.m : p.n;
    for (int64_t line = 0; line + 1 < lines; ++line) {
      for (int64_t x = len; x < p.d.ld; ++x) {
        for (int64_t q = 0; q < es; ++q) {
          if (d.host[(line * p.d.ld + x) * es + q] != 0xff) {
            return absl::StrCat("wrote padding at line ", line, " col ", x);
          }
        }
      }
    }
  }
  return "";
}

// Runs on an sm_90 GPU only; skips with the reason elsewhere.
class Sm90FamilyGpuTest : public Sm90GpuTest {
 protected:
  // `env` names the variable that overrides `count`.
  void RunRandomProblems(bool gated, const char* env, int count, int at_least);

  // Compiles `c` for `p` and checks two runs in a row against float64, so
  // that whatever a launch leaves behind (split-K tickets, barrier phases)
  // must be back where the next launch expects it.
  void RunTwice(const GemmProblem& p, const jit::KernelConfig& c, std::mt19937_64& rng) {
    Options options;
    bool compiled = false;
    auto backend = JitBackend::Create(p, c, options, device_, &compiled);
    ASSERT_TRUE(backend.ok()) << c.ToString() << ": " << backend.status();
    for (int run = 0; run < 2; ++run) {
      EXPECT_EQ(RunOne(p, **backend, rng), "")
          << "run " << run << " " << DebugString(p) << " " << (*backend)->Describe();
    }
  }
};

void Sm90FamilyGpuTest::RunRandomProblems(bool gated, const char* env, int count, int at_least) {
  const jit::DeviceContext* device = &device_;
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
  RunRandomProblems(/*gated=*/false, "JITGEMM_SM90_PROBLEMS", 320, 300);
}

TEST_F(Sm90FamilyGpuTest, RandomGatedProblemsMatchFloat64Reference) {
  RunRandomProblems(/*gated=*/true, "JITGEMM_SM90_GATED_PROBLEMS", 120, 100);
}

// Ping-pong warpgroups take turns over many tiles per CTA, with more k slices
// per tile than ring stages: where a warpgroup could run two phases ahead of
// a stage's barrier (the random problems have one or two tiles per CTA).
TEST_F(Sm90FamilyGpuTest, PingPongOverManyTilesPerCtaMatchesFloat64Reference) {
  std::mt19937_64 rng(20261126);
  for (const bool gated : {false, true}) {
    GemmProblem p;
    p.m = 1000;
    p.n = 1024;
    p.k = 520;  // 9 k slices, more than the stages of a 128 x 128 tile
    p.batch_count = 8;
    p.a.type = p.b.type = p.c.type = p.d.type = DataType::kBF16;
    p.b.layout = Layout::kColMajor;
    p.epilogue.bias = BiasMode::kPerColumn;
    p.epilogue.activation = Activation::kSilu;
    if (gated) p.epilogue.gate = Gate::kHalves;
    p.a.batch_stride = p.m * p.k;
    p.b.batch_stride = p.k * BColumns(p);
    p.c.batch_stride = p.d.batch_stride = p.m * p.n;
    p = Canonicalize(p);
    ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
    for (const auto& [bm, bn, cluster] : {std::tuple{128, 128, 1}, std::tuple{128, 128, 2},
                                          std::tuple{64, 256, 1}, std::tuple{64, 256, 2}}) {
      jit::KernelConfig c = jit::Sm90Config(bm, bn, 2, 4, cluster);
      c.ping_pong = true;
      Options options;
      bool compiled = false;
      auto backend = JitBackend::Create(p, c, options, device_, &compiled);
      ASSERT_TRUE(backend.ok()) << c.ToString() << ": " << backend.status();
      EXPECT_EQ(RunOne(p, **backend, rng), "") << DebugString(p) << " " << (*backend)->Describe();
    }
  }
}

// Split-K of only the last units (a last, partial wave), tiles of up to 128
// accumulators a thread, with and without clusters, 16-bit and fp32 D, gated
// too: every kernel runs twice, so its tickets must be back at zero after a
// launch.
TEST_F(Sm90FamilyGpuTest, LastWaveSplitsMatchFloat64ReferenceTwiceInARow) {
  std::mt19937_64 rng(20261128);
  int ran = 0, index = 0;
  // {m, n, k, batch}: 9, 4 and 16 k slices.
  for (const auto& [m, n, k, batch] :
       {std::tuple{300, 520, 520, 16}, std::tuple{1000, 1000, 200, 3},
        std::tuple{130, 520, 1000, 24}}) {
    for (const auto& [bm, bn, consumers, cluster] :
         {std::tuple{128, 256, 2, 1}, std::tuple{128, 256, 2, 2}, std::tuple{128, 128, 2, 2},
          std::tuple{128, 128, 2, 1}, std::tuple{64, 256, 1, 1}, std::tuple{128, 192, 2, 2}}) {
      ++index;
      GemmProblem p = StridedBatch(m, n, k, batch, index);
      // An N-major B tile of 128 x 192 splits into 3 blocks, not over 2 CTAs.
      p.b.layout =
          index % 3 == 0 && !(bn == 192 && cluster == 2) ? Layout::kRowMajor : Layout::kColMajor;
      p.epilogue.bias = index % 3 == 1 ? BiasMode::kPerRow : BiasMode::kPerColumn;
      p.epilogue.activation = index % 2 ? Activation::kGeluTanh : Activation::kSilu;
      p.epilogue.beta = index % 2 ? 0.5f : 0.f;
      p = Canonicalize(p);
      ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
      jit::KernelConfig c = jit::Sm90Config(bm, bn, consumers, 4, cluster);
      const int64_t units = (m + bm * cluster - 1) / (bm * cluster) * ((n + bn - 1) / bn) * batch;
      c.split_units = static_cast<int>(units % 132 != 0 ? units % 132 : 7);
      c.pdl = index % 2 == 0;
      // The first of 2, 3 or 4 splits (starting at one the index picks) that
      // leaves every split a k slice.
      absl::Status supported = absl::UnknownError("no split");
      for (int j = 0; j < 3 && !supported.ok(); ++j) {
        c.split_k = 2 + (index + j) % 3;
        supported = jit::GetFamily(jit::Family::kSm90).Supports(p, c, device_.target);
      }
      ASSERT_TRUE(supported.ok()) << c.ToString() << ": " << supported;
      RunTwice(p, c, rng);
      ++ran;
    }
  }
  std::printf("last-wave splits: %d configs run twice\n", ran);
  EXPECT_EQ(ran, 18);
}

// Split-K in two within a cluster of two CTAs (split_cluster.cuh): many
// tiles per cluster, so that rank 1 waits for rank 0 to free its buffer;
// warpgroups whose rows lie past M (no hand-over); 16-bit and fp32 D, C,
// column and row bias, N-major B; every kernel runs twice.
TEST_F(Sm90FamilyGpuTest, ClusterSplitsMatchFloat64ReferenceTwiceInARow) {
  std::mt19937_64 rng(20261130);
  int ran = 0, index = 0;
  // {m, n, k, batch}: 16 and 9 k slices.
  for (const auto& [m, n, k, batch] :
       {std::tuple{1060, 520, 1000, 1}, std::tuple{300, 256, 520, 8}}) {
    for (const auto& [bm, bn, consumers] :
         {std::tuple{64, 64, 1}, std::tuple{128, 64, 2}, std::tuple{64, 128, 1}}) {
      ++index;
      GemmProblem p = StridedBatch(m, n, k, batch, index);
      p.b.layout = index % 3 == 0 ? Layout::kRowMajor : Layout::kColMajor;
      p.epilogue.bias = index % 3 == 1 ? BiasMode::kPerRow : BiasMode::kPerColumn;
      p.epilogue.activation = index % 2 ? Activation::kGeluErf : Activation::kRelu;
      p.epilogue.beta = index % 2 ? 0.f : 0.5f;
      p = Canonicalize(p);
      ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
      jit::KernelConfig c = jit::Sm90Config(bm, bn, consumers, 4, 1);
      c.split_k = 2;
      c.cluster_k = true;
      c.pdl = index % 2 == 0;
      RunTwice(p, c, rng);
      ++ran;
    }
  }
  std::printf("cluster splits: %d configs run twice\n", ran);
  EXPECT_EQ(ran, 6);
}

// Tiles that reach past M or N: the last tile of a K-major A (B) loads
// through a box only as deep as the rows left, rounded up to 8 (mainloop.cuh,
// kATail / kBTail), and the stage rows past it hold what earlier stages left
// there. Rows past M (N) must still come out right (they are never stored) and
// every barrier must see the bytes it expects: one tile or several, single
// CTAs and pairs (a pair's second tile may lie wholly past M; a pair's shared
// B keeps its boxes), split-K through the workspace and within a cluster,
// ping-pong, a gate, early B; M and N down to 1; a column-major A (boxed as
// before) beside them.
// The tensor maps carry the operands' addresses, so they are encoded for
// each run's pointers: runs that alternate operand sets, or change only D,
// must each read and write their own tensors (and would catch a cache of
// maps that keyed on too little). 200 x 520 in 64 x 128 tiles has A, B and
// D maps and both tail boxes.
TEST_F(Sm90FamilyGpuTest, RunsOverChangingPointersUseTheirOwnTensors) {
  std::mt19937_64 rng(20261205);
  GemmProblem p = StridedBatch(200, 520, 256, 1, 1);
  p.b.layout = Layout::kColMajor;
  p = Canonicalize(p);
  ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
  const jit::KernelConfig c = jit::Sm90Config(64, 128, 1, 4, 1);
  ASSERT_TRUE(jit::GetFamily(jit::Family::kSm90).Supports(p, c, device_.target).ok());
  ASSERT_TRUE(jit::Sm90TmaStore(p, c));
  Options options;
  bool compiled = false;
  auto backend = JitBackend::Create(p, c, options, device_, &compiled);
  ASSERT_TRUE(backend.ok()) << backend.status();
  Buffer a[2], b[2], d[3];
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(a[i].Allocate(p.m * p.k * 2, 0), cudaSuccess);
    ASSERT_EQ(b[i].Allocate(p.n * p.k * 2, 0), cudaSuccess);
    a[i].FillRandom(p.a.type, rng);
    b[i].FillRandom(p.b.type, rng);
    CUDA_OK(a[i].Upload());
    CUDA_OK(b[i].Upload());
  }
  for (Buffer& x : d) ASSERT_EQ(x.Allocate(p.m * p.n * 2, 0), cudaSuccess);
  struct Step {
    int a, b, d;
  };
  const Step steps[] = {{0, 0, 0}, {1, 1, 1}, {0, 0, 0}, {0, 0, 2},
                        {0, 1, 2}, {1, 0, 2}, {1, 0, 2}};
  for (const Step& step : steps) {
    for (Buffer& x : d) CUDA_OK(x.Poison());
    ASSERT_TRUE(
        (*backend)
            ->Run({a[step.a].device, b[step.b].device, nullptr, d[step.d].device, nullptr}, nullptr)
            .ok());
    CUDA_OK(cudaDeviceSynchronize());
    const auto ref =
        ReferenceGemm(p, a[step.a].host.data(), b[step.b].host.data(), nullptr, nullptr);
    for (int i = 0; i < 3; ++i) {
      CUDA_OK(d[i].Download());
      if (i == step.d) {
        EXPECT_LT(RelativeError(p, d[i].host.data(), ref), Tolerance(p))
            << "a" << step.a << " b" << step.b << " d" << step.d;
      } else {
        EXPECT_EQ(d[i].host[0], 0xff) << "d" << i << " written by a run into d" << step.d;
        EXPECT_EQ(d[i].host.back(), 0xff) << "d" << i << " written by a run into d" << step.d;
      }
    }
  }
}

TEST_F(Sm90FamilyGpuTest, TilesPastMOrNMatchFloat64ReferenceTwiceInARow) {
  std::mt19937_64 rng(20261204);
  struct Case {
    int m, n, bm, bn, consumers, cluster, split;
    bool cluster_k, ping_pong, gated, early_b, col_a, row_b = false;
  };
  const Case cases[] = {
      {16, 520, 64, 128, 1, 1, 1, false, false, false, false, false},
      {1, 520, 64, 128, 1, 1, 2, false, false, false, false, false},
      {40, 520, 64, 128, 1, 2, 1, false, false, false, false, false},
      {8, 520, 64, 128, 1, 1, 2, true, false, false, false, false},
      {100, 520, 128, 128, 2, 1, 1, false, false, false, false, false},
      {33, 520, 128, 128, 2, 2, 1, false, false, false, true, false},
      {63, 520, 128, 128, 2, 1, 1, false, true, false, false, false},
      {24, 264, 128, 256, 2, 1, 1, false, false, true, false, false},
      {16, 520, 64, 128, 1, 1, 1, false, false, false, true, false},
      {24, 520, 64, 128, 1, 1, 1, false, false, false, false, true},
      {300, 24, 128, 128, 2, 1, 1, false, false, false, false, false},
      {300, 1, 128, 64, 2, 1, 2, false, false, false, false, false},
      {300, 100, 128, 128, 2, 1, 2, true, false, false, false, false},
      {300, 40, 128, 128, 2, 2, 1, false, false, false, false, false},
      {16, 8, 64, 64, 1, 1, 1, false, false, false, true, false},
      {130, 72, 64, 96, 1, 1, 1, false, false, false, false, false},
      {200, 520, 64, 128, 1, 1, 1, false, false, false, false, false},
      {300, 1000, 128, 128, 2, 2, 1, false, false, false, false, false},
      {129, 1000, 128, 128, 2, 1, 2, true, false, false, false, false},
      {200, 300, 64, 256, 1, 1, 1, false, false, false, true, false},
      {200, 264, 128, 256, 2, 1, 1, false, false, true, false, false},
      {300, 520, 128, 128, 2, 1, 1, false, true, false, false, false},
      // M-major A and N-major B, which keep whole 64-column blocks: rows past
      // M or N lie inside the blocks' lines or fill whole blocks.
      {136, 296, 128, 256, 2, 1, 1, false, false, false, false, true, true},
      {200, 520, 64, 128, 1, 2, 1, false, false, false, false, true, false},
      {72, 264, 128, 128, 1, 1, 1, false, false, false, false, true, false},
      {120, 100, 64, 64, 1, 1, 2, false, false, false, false, true, false},
      {304, 72, 128, 128, 2, 1, 1, false, true, false, false, true, true},
      {1000, 200, 128, 128, 2, 1, 1, false, false, false, true, true, false},
      {136, 1000, 128, 128, 2, 1, 2, true, false, false, false, true, false},
      {40, 520, 64, 128, 1, 2, 1, false, false, false, false, true, true},
      {56, 56, 128, 128, 2, 1, 2, true, false, false, true, true, true},
      {200, 520, 64, 128, 1, 1, 2, false, false, false, false, false, true},
  };
  int ran = 0;
  for (const Case& t : cases) {
    GemmProblem p = StridedBatch(t.m, t.n, 1000, ran % 2 ? 3 : 1, ran);
    p.b.layout = Layout::kColMajor;
    if (t.col_a) p.a.layout = Layout::kColMajor;
    if (t.row_b) p.b.layout = Layout::kRowMajor;
    p.epilogue.bias = ran % 3 == 1 ? BiasMode::kPerRow : BiasMode::kPerColumn;
    p.epilogue.activation = ran % 2 ? Activation::kGeluErf : Activation::kSilu;
    if (t.gated) {
      p.epilogue.gate = Gate::kHalves;
      p.epilogue.bias = BiasMode::kPerColumn;
      p.b.batch_stride = p.batch_count > 1 ? p.k * 2 * p.n : p.b.batch_stride;
    } else {
      p.epilogue.beta = ran % 3 == 2 ? 0.5f : 0.f;
    }
    p = Canonicalize(p);
    ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
    jit::KernelConfig c = jit::Sm90Config(t.bm, t.bn, t.consumers, 4, t.cluster);
    c.split_k = t.split;
    c.cluster_k = t.cluster_k;
    c.ping_pong = t.ping_pong;
    c.early_b = t.early_b;
    c.pdl = t.early_b || ran % 2 == 0;
    const absl::Status supported =
        jit::GetFamily(jit::Family::kSm90).Supports(p, c, device_.target);
    ASSERT_TRUE(supported.ok()) << c.ToString() << " " << DebugString(p) << ": " << supported;
    RunTwice(p, c, rng);
    ++ran;
  }
  std::printf("tiles past M or N: %d configs run twice\n", ran);
  EXPECT_EQ(ran, 32);
}

// Tiles 96, 160 and 224 columns wide (K-major B), alone and in pairs
// multicasting B, N off the tile: 16-bit D staged with the last block
// overlapping the one before (N = 1000) or stored from registers (N = 2100,
// rows not 16-byte aligned); fp32 D staged in whole 32-column blocks.
TEST_F(Sm90FamilyGpuTest, TilesOffTheStepsOf64MatchFloat64Reference) {
  std::mt19937_64 rng(20261202);
  int ran = 0, index = 0;
  for (const auto& [m, n, k, batch] :
       {std::tuple{304, 1000, 520, 2}, std::tuple{136, 2100, 200, 3}}) {
    for (const auto& [bn, cluster] : {std::pair{224, 1}, std::pair{224, 2}, std::pair{160, 2},
                                      std::pair{160, 1}, std::pair{96, 2}}) {
      ++index;
      GemmProblem p = StridedBatch(m, n, k, batch, index);
      p.b.layout = Layout::kColMajor;
      if (index % 3 == 0) p.a.layout = Layout::kColMajor;
      p.epilogue.bias = index % 3 == 1 ? BiasMode::kPerRow : BiasMode::kPerColumn;
      p.epilogue.activation = index % 2 ? Activation::kGeluErf : Activation::kSilu;
      p.epilogue.beta = index % 2 ? 0.f : 0.5f;
      p = Canonicalize(p);
      ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
      jit::KernelConfig c = jit::Sm90Config(128, bn, 2, 4, cluster);
      c.pdl = index % 2 == 0;
      RunTwice(p, c, rng);
      ++ran;
    }
  }
  std::printf("tiles off the steps of 64: %d configs run twice\n", ran);
  EXPECT_EQ(ran, 10);
}

// The cluster split on a few tiles, one a cluster (every hand-over is a
// cluster's first), and on two or three tiles a cluster (90 or 162 units for
// 66 clusters), so that rank 1 waits for rank 0 to free its buffer before each
// later hand-over; M, N and K off the tile. Small enough for racecheck
// (scripts/gpu_session.sh sanitize).
TEST_F(Sm90FamilyGpuTest, ClusterSplitOfFewOrSeveralTilesPerClusterMatchesFloat64Reference) {
  std::mt19937_64 rng(20261201);
  int ran = 0;
  for (const auto& [m, n, k] : {std::tuple{130, 72, 200}, std::tuple{1100, 520, 256}}) {
    const bool several = m > 1000;
    for (const auto& [bm, consumers] : {std::pair{64, 1}, std::pair{128, 2}}) {
      GemmProblem p = StridedBatch(m, n, k, 1, ran);
      p.epilogue.bias = several ? BiasMode::kPerRow : BiasMode::kPerColumn;
      p.epilogue.activation = several ? Activation::kSilu : Activation::kGeluErf;
      p = Canonicalize(p);
      ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
      jit::KernelConfig c = jit::Sm90Config(bm, 64, consumers, 4, 1);
      c.split_k = 2;
      c.cluster_k = true;
      c.pdl = ran % 2 == 0;
      RunTwice(p, c, rng);
      ++ran;
    }
  }
  EXPECT_EQ(ran, 4);
}

// Options::constant_b: the producer loads the first ring slices' B before the
// wait for the previous grid (kEarlyB). Each kernel runs back to back with PDL
// against its twin without early B: one k slice, fewer slices than the ring
// (the early loads cross into the CTA's next tiles) and more; clusters, split
// through the workspace or a cluster, ping-pong, a gate, an N-major B.
TEST_F(Sm90FamilyGpuTest, EarlyBKernelsBackToBackMatchFloat64Reference) {
  std::mt19937_64 rng(20261128);
  int ran = 0;
  struct Case {
    int64_t m, n, k, batch;
    int bm, bn, consumers, stages, cluster, split;
    bool cluster_k, ping_pong, gated, n_major_b;
  };
  for (const Case& t : {Case{300, 520, 64, 6, 128, 128, 2, 4, 2, 1, false, false, false, false},
                        Case{200, 1000, 200, 3, 64, 128, 1, 8, 1, 1, false, false, false, true},
                        Case{1100, 520, 1000, 1, 128, 256, 2, 4, 2, 1, false, false, false, false},
                        Case{256, 1024, 2048, 1, 64, 64, 1, 12, 1, 2, true, false, false, false},
                        Case{256, 1024, 2048, 1, 64, 128, 1, 8, 1, 3, false, false, false, false},
                        Case{640, 1000, 520, 2, 128, 128, 2, 4, 1, 1, false, true, false, false},
                        Case{520, 1000, 328, 2, 128, 256, 2, 4, 2, 1, false, false, true, false}}) {
    GemmProblem p = StridedBatch(t.m, t.n, t.k, t.batch, ran);
    if (t.gated) {
      p.epilogue.gate = Gate::kHalves;
      p.b.batch_stride = p.k * BColumns(p);
    }
    p.b.layout = t.n_major_b ? Layout::kRowMajor : Layout::kColMajor;
    p.epilogue.bias = ran % 2 ? BiasMode::kPerRow : BiasMode::kPerColumn;
    if (t.gated) p.epilogue.bias = BiasMode::kPerColumn;
    p.epilogue.activation = ran % 2 ? Activation::kSilu : Activation::kGeluErf;
    p = Canonicalize(p);
    ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
    std::vector<std::unique_ptr<JitBackend>> backends;
    for (const bool early : {true, false}) {
      jit::KernelConfig c = jit::Sm90Config(t.bm, t.bn, t.consumers, t.stages, t.cluster);
      c.split_k = t.split;
      c.cluster_k = t.cluster_k;
      c.ping_pong = t.ping_pong;
      c.early_b = early;
      c.pdl = true;
      Options options;
      options.constant_b = true;
      bool compiled = false;
      auto backend = JitBackend::Create(p, c, options, device_, &compiled);
      ASSERT_TRUE(backend.ok()) << c.ToString() << ": " << backend.status();
      backends.push_back(std::move(*backend));
    }
    EXPECT_EQ(RunOne(p, *backends[0], rng, backends[1].get(), /*pairs=*/10), "")
        << DebugString(p) << " " << backends[0]->Describe();
    EXPECT_EQ(RunOne(p, *backends[0], rng, backends[0].get(), /*pairs=*/10), "")
        << DebugString(p) << " " << backends[0]->Describe() << " twice";
    ++ran;
  }
  std::printf("early-B kernels back to back: %d configs\n", ran);
  EXPECT_EQ(ran, 7);
}

// Cluster CTAs leave without a closing cluster barrier, once every remote
// release of their ring stages has landed. Kernels of different shared-memory
// layouts run back to back with PDL, so that a release landing late would hit
// the next kernel's ring or barriers; tiles of one to four k slices and
// several tiles per CTA, so that the CTAs of a cluster finish apart.
TEST_F(Sm90FamilyGpuTest, ClusterKernelsBackToBackMatchFloat64Reference) {
  std::mt19937_64 rng(20261129);
  int ran = 0;
  for (const bool gated : {false, true}) {
    for (const auto& [m, n, k, batch] :
         {std::tuple{1000, 520, 64, 6}, std::tuple{300, 1024, 200, 8}}) {
      GemmProblem p;
      p.m = m;
      p.n = n;
      p.k = k;
      p.batch_count = batch;
      p.a.type = p.b.type = p.c.type = p.d.type = gated ? DataType::kBF16 : DataType::kF16;
      p.b.layout = Layout::kColMajor;
      p.epilogue.bias = BiasMode::kPerColumn;
      p.epilogue.activation = gated ? Activation::kSilu : Activation::kGeluTanh;
      if (gated) p.epilogue.gate = Gate::kHalves;
      p.a.batch_stride = p.m * p.k;
      p.b.batch_stride = p.k * BColumns(p);
      p.c.batch_stride = p.d.batch_stride = p.m * p.n;
      p = Canonicalize(p);
      ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
      // {bm, bn, consumers, stages} of the two kernels taking turns.
      using Tile = std::tuple<int, int, int, int>;
      for (const auto& [first, second] : {std::pair{Tile{64, 128, 1, 8}, Tile{128, 256, 2, 4}},
                                          std::pair{Tile{128, 128, 2, 2}, Tile{64, 256, 1, 3}}}) {
        std::vector<std::unique_ptr<JitBackend>> backends;
        for (const auto& [bm, bn, consumers, stages] : {first, second}) {
          jit::KernelConfig c = jit::Sm90Config(bm, bn, consumers, stages, /*cluster_m=*/2);
          c.pdl = true;
          Options options;
          bool compiled = false;
          auto backend = JitBackend::Create(p, c, options, device_, &compiled);
          ASSERT_TRUE(backend.ok()) << c.ToString() << ": " << backend.status();
          backends.push_back(std::move(*backend));
        }
        EXPECT_EQ(RunOne(p, *backends[0], rng, backends[1].get(), /*pairs=*/25), "")
            << DebugString(p) << " " << backends[0]->Describe() << " / " << backends[1]->Describe();
        ++ran;
      }
    }
  }
  std::printf("cluster kernels back to back: %d pairs\n", ran);
  EXPECT_EQ(ran, 8);
}

// Wide tiles (more than two staging blocks per warpgroup, so a warpgroup's
// stores wait for its staging blocks) over several tiles per CTA, 16-bit and
// fp32 D:
// every ring depth, with and without clusters, tiles of one k slice and of
// more than the ring holds, and warpgroups whose rows lie past M.
TEST_F(Sm90FamilyGpuTest, WideTilesOverManyTilesPerCtaMatchFloat64Reference) {
  std::mt19937_64 rng(20261127);
  const int every = std::max(1, EnvInt("JITGEMM_SM90_WIDE_EVERY", 1));
  int ran = 0, refused = 0, index = 0;
  std::vector<CompileJob> jobs;
  // {m, n, k, batch}: 1, 3 and 9 k slices.
  for (const auto& [m, n, k, batch] : {std::tuple{130, 520, 64, 64}, std::tuple{300, 520, 136, 24},
                                       std::tuple{512, 520, 520, 4}}) {
    for (const auto& [bm, bn, consumers] :
         {std::tuple{128, 256, 2}, std::tuple{256, 128, 2}, std::tuple{128, 192, 2},
          std::tuple{64, 256, 1}, std::tuple{64, 192, 1}, std::tuple{128, 128, 1}}) {
      for (const int stages : {2, 3, 4}) {
        for (const int cluster : {1, 2}) {
          if (index++ % every != 0) continue;
          // fp32 D (every fourth): staged TMA stores but for each warpgroup's last tile.
          GemmProblem p = StridedBatch(m, n, k, batch, index);
          p.b.layout = Layout::kColMajor;
          p.epilogue.beta = index % 3 == 0 ? 0.5f : 0.f;  // C read: the positioned path
          p.epilogue.bias = index % 3 == 1 ? BiasMode::kPerRow : BiasMode::kPerColumn;
          p.epilogue.activation = index % 2 ? Activation::kGeluTanh : Activation::kSilu;
          p = Canonicalize(p);
          ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
          jit::KernelConfig c = jit::Sm90Config(bm, bn, consumers, stages, cluster);
          c.pdl = index % 2 == 0;
          jobs.push_back({p, c});
        }
      }
    }
  }
  CompileInParallel(jobs, device_);
  for (const CompileJob& job : jobs) {
    const GemmProblem& p = job.problem;
    const jit::KernelConfig& c = job.config;
    Options options;
    bool compiled = false;
    auto backend = JitBackend::Create(p, c, options, device_, &compiled);
    if (!backend.ok()) {  // more shared memory than a CTA has
      ASSERT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument)
          << c.ToString() << ": " << backend.status();
      ++refused;
      continue;
    }
    ++ran;
    EXPECT_EQ(RunOne(p, **backend, rng), "") << DebugString(p) << " " << (*backend)->Describe();
  }
  std::printf("wide tiles: %d configs run, %d refused\n", ran, refused);
  EXPECT_GE(ran, 90 / every);
}

}  // namespace
}  // namespace jitgemm::support
