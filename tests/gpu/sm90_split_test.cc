// The sm90 family's split-K: of a last wave's units only, through the
// workspace, and in two within a cluster of two CTAs (split_cluster.cuh).

#include <cstdint>
#include <cstdio>
#include <random>
#include <tuple>
#include <utility>

#include "gtest/gtest.h"
#include "jit/families/sm90.h"
#include "jit/family.h"
#include "tests/gpu/gpu_case.h"
#include "tests/gpu/sm90_case.h"
#include "tests/jit/sm90_config.h"

namespace jitgemm::support {
namespace {

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
      // An N-major B tile of 128 x 192 in a pair: its 3 blocks split 2 and 1.
      p.b.layout = index % 3 == 0 ? Layout::kRowMajor : Layout::kColMajor;
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

}  // namespace
}  // namespace jitgemm::support
