// The sm90 family's tile edges: tiles that reach past M or N, tiles whose
// width is off the steps of 64, wide tiles over many tiles per CTA, and the
// tensor maps encoded for each run's pointers.

#include <algorithm>
#include <cstdio>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/jit_backend.h"
#include "core/problem_signature.h"
#include "gtest/gtest.h"
#include "jit/families/sm90.h"
#include "jit/family.h"
#include "support/reference.h"
#include "tests/gpu/gpu_case.h"
#include "tests/gpu/sm90_case.h"
#include "tests/jit/sm90_config.h"

namespace jitgemm::support {
namespace {

// Tiles that reach past M or N: the last tile of a K-major A (B) loads
// through a box only as deep as the rows left, rounded up to 8 (mainloop.cuh,
// kATail / kBTail), and the stage rows past it hold what earlier stages left
// there. Rows past M (N) must still come out right (they are never stored) and
// every barrier must see the bytes it expects: one tile or several, single
// CTAs and pairs (a pair's second tile may lie wholly past M; a pair's shared
// B keeps its boxes), split-K through the workspace and within a cluster,
// ping-pong, a gate, early B; M and N down to 1; a column-major A (boxed as
// before) beside them.
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
      // fp32 D with SiLU or a GELU takes warpgroup tiles of 64 rows and no
      // ping-pong (jit/families/sm90_rules.cc): those tiles run it with ReLU.
      if (p.d.type == DataType::kF32 && (t.ping_pong || t.bm / t.consumers > 64)) {
        p.epilogue.activation = Activation::kRelu;
      }
    }
    p = Canonicalize(p);
    ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p);
    jit::KernelConfig c = jit::Sm90Config(t.bm, t.bn, t.consumers, 4, t.cluster);
    c.split_k = t.split;
    c.cluster_k = t.cluster_k;
    c.ping_pong = t.ping_pong;
    c.early_b = t.early_b;
    c.pdl = t.early_b || ran % 2 == 0;
    RunTwice(p, c, rng);
    ++ran;
  }
  std::printf("tiles past M or N: %d configs run twice\n", ran);
  EXPECT_EQ(ran, 32);
}

// Tiles 96, 160 and 224 columns wide, alone and in pairs multicasting B, N
// off the tile: 16-bit D staged with the last block overlapping the one
// before (N = 1000) or stored from registers (N = 2100, rows not 16-byte
// aligned); fp32 D staged in whole 32-column blocks. A K-major B, and an
// N-major one in 32-column blocks, 64-byte swizzled, with rows 16-byte
// aligned (N = 1000): a pair splits its 3, 5 or 7 blocks unevenly.
TEST_F(Sm90FamilyGpuTest, TilesOffTheStepsOf64MatchFloat64Reference) {
  std::mt19937_64 rng(20261202);
  int ran = 0, index = 0;
  for (const Layout b : {Layout::kColMajor, Layout::kRowMajor}) {
    for (const auto& [m, n, k, batch] :
         {std::tuple{304, 1000, 520, 2}, std::tuple{136, 2100, 200, 3}}) {
      for (const auto& [bn, cluster] : {std::pair{224, 1}, std::pair{224, 2}, std::pair{160, 2},
                                        std::pair{160, 1}, std::pair{96, 2}}) {
        if (b == Layout::kRowMajor && n % 8 != 0) continue;
        ++index;
        GemmProblem p = StridedBatch(m, n, k, batch, index);
        p.b.layout = b;
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
  }
  std::printf("tiles off the steps of 64: %d configs run twice\n", ran);
  EXPECT_EQ(ran, 15);
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

}  // namespace
}  // namespace jitgemm::support
