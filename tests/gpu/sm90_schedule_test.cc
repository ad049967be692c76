// The sm90 family's schedules across tiles and kernels: ping-pong
// warpgroups over many tiles, early B under PDL, and cluster CTAs that leave
// without a closing barrier, kernels run back to back.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/jit_backend.h"
#include "core/problem_signature.h"
#include "gtest/gtest.h"
#include "jit/families/sm90.h"
#include "tests/gpu/gpu_case.h"
#include "tests/gpu/sm90_case.h"
#include "tests/jit/sm90_config.h"

namespace jitgemm::support {
namespace {

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

}  // namespace
}  // namespace jitgemm::support
