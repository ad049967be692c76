// The sm90 family's ping-pong tiles of 160 and 192 accumulators a thread
// (128 x 160 and 128 x 192 a warpgroup) against float64: many tiles per CTA
// with more k slices than ring stages, tiles past M and N, N-major B,
// M-major A, batches, gates, and each epilogue the rules let them take.

#include <cstdio>
#include <random>
#include <tuple>

#include "core/problem_signature.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_case.h"
#include "tests/gpu/sm90_case.h"
#include "tests/jit/sm90_config.h"

namespace jitgemm::support {
namespace {

TEST_F(Sm90FamilyGpuTest, WidePingPongTilesMatchFloat64ReferenceTwiceInARow) {
  std::mt19937_64 rng(20261128);
  struct Case {
    int m, n, k, batch, bn, cluster;
    bool n_major_b, m_major_a;
    BiasMode bias;
    Activation act;
    float beta;
  };
  // Indexes 0, 4, 8, 12 and 16 have fp32 D (StridedBatch), which these tiles
  // take without a bias or C.
  const Case cases[] = {
      // 768 tiles of 128 x 192 (about 6 a CTA), 9 k slices over a ring of 4.
      {2000, 1000, 520, 8, 192, 1, false, false, BiasMode::kNone, Activation::kRelu, 0.f},
      {2000, 1000, 520, 8, 192, 2, false, false, BiasMode::kPerRow, Activation::kRelu, 0.f},
      {2000, 1000, 520, 8, 160, 2, false, true, BiasMode::kPerColumn, Activation::kGeluErf, 0.f},
      {2000, 1000, 520, 8, 160, 1, false, false, BiasMode::kNone, Activation::kGeluTanh, 1.f},
      {1000, 1024, 1000, 8, 192, 1, true, false, BiasMode::kNone, Activation::kNone, 0.f},
      {1000, 1088, 136, 6, 192, 1, true, true, BiasMode::kPerColumn, Activation::kSilu, 0.f},
      // One or two tiles a CTA, edges in M, N and K.
      {33, 100, 72, 1, 192, 1, false, false, BiasMode::kPerColumn, Activation::kRelu, 0.f},
      {136, 200, 1000, 2, 192, 2, false, true, BiasMode::kPerColumn, Activation::kSilu, 0.f},
      {300, 170, 64, 3, 160, 2, false, false, BiasMode::kNone, Activation::kRelu, 0.f},
      {257, 520, 200, 1, 192, 1, true, false, BiasMode::kPerRow, Activation::kRelu, 0.f},
      // Epilogues computing values beside the accumulators, which these
      // tiles take because their kernel zeroes them before each tile: GELU
      // at 192, a per-row bias with SiLU or a GELU.
      {2000, 1000, 520, 8, 192, 1, true, false, BiasMode::kPerColumn, Activation::kGeluErf, 0.f},
      {2000, 1000, 520, 8, 160, 2, false, false, BiasMode::kPerRow, Activation::kSilu, 0.f},
      {300, 176, 1000, 3, 192, 1, true, false, BiasMode::kNone, Activation::kRelu, 0.f},
      {1000, 1088, 136, 6, 192, 1, false, true, BiasMode::kPerRow, Activation::kGeluTanh, 0.f},
      // 160 wide with an N-major B (five 32-column blocks).
      {1000, 1000, 520, 4, 160, 1, true, false, BiasMode::kPerColumn, Activation::kSilu, 0.f},
      // N-major B in pairs, its blocks split unevenly: 5 of 32 columns, 3 of
      // 64 (index 16 has fp32 D).
      {1000, 1000, 520, 4, 160, 2, true, false, BiasMode::kPerColumn, Activation::kGeluErf, 0.f},
      {2000, 1000, 520, 8, 192, 2, true, true, BiasMode::kNone, Activation::kRelu, 0.f},
  };
  int ran = 0;
  for (const Case& t : cases) {
    GemmProblem p = StridedBatch(t.m, t.n, t.k, t.batch, ran);
    p.b.layout = t.n_major_b ? Layout::kRowMajor : Layout::kColMajor;
    if (t.m_major_a) p.a.layout = Layout::kColMajor;
    p.epilogue.bias = t.bias;
    p.epilogue.beta = t.beta;
    p.epilogue.activation = t.act;
    RunPingPongTwice(p, t.bn, t.cluster, ran % 2 == 0, rng);
    ++ran;
  }
  std::printf("wide ping-pong tiles: %d configs run twice\n", ran);
  EXPECT_EQ(ran, 17);
}

// Gated tiles ([gate | up] halves of B): 96 or 80 columns of D a tile, so N
// off the tile at every width; seed 001's grouped layout, 16-bit D, each
// activation, with and without a bias. An N-major B (192 wide only: whole
// 32-column blocks a half, 64-byte swizzled) in clusters of 1 and 2, and in
// the cooperative 128 x 192 tile beside the ping-pong one.
TEST_F(Sm90FamilyGpuTest, GatedWidePingPongTilesMatchFloat64ReferenceTwiceInARow) {
  std::mt19937_64 rng(20261129);
  struct Case {
    int m, n, k, groups, bn, cluster;
    DataType in;
    BiasMode bias;
    Activation act;
    bool n_major_b = false;
  };
  const Case cases[] = {
      // 11 x 8 x 4 tiles of 128 x 192 (96 columns of D each), 9 k slices.
      {1300, 700, 520, 4, 192, 1, DataType::kBF16, BiasMode::kPerColumn, Activation::kSilu},
      {1300, 768, 520, 4, 192, 2, DataType::kBF16, BiasMode::kNone, Activation::kGeluTanh},
      {1000, 1003, 136, 3, 160, 1, DataType::kF16, BiasMode::kPerColumn, Activation::kGeluErf},
      {777, 1001, 200, 1, 160, 2, DataType::kBF16, BiasMode::kNone, Activation::kSilu},
      {500, 480, 1000, 2, 192, 1, DataType::kF16, BiasMode::kPerColumn, Activation::kGeluErf},
      // One tile or part of one.
      {33, 100, 72, 1, 192, 1, DataType::kBF16, BiasMode::kPerColumn, Activation::kGeluTanh},
      // N-major B.
      {1300, 704, 520, 4, 192, 1, DataType::kBF16, BiasMode::kPerColumn, Activation::kSilu, true},
      {1000, 1000, 136, 3, 192, 2, DataType::kF16, BiasMode::kNone, Activation::kGeluErf, true},
      {300, 200, 1000, 1, 192, 1, DataType::kBF16, BiasMode::kNone, Activation::kGeluTanh, true},
  };
  int ran = 0;
  for (const Case& t : cases) {
    GemmProblem p = MakeGemm(t.m, t.n, t.k, t.in);
    p.b.layout = t.n_major_b ? Layout::kRowMajor : Layout::kColMajor;
    p.epilogue.gate = Gate::kHalves;
    p.epilogue.bias = t.bias;
    p.epilogue.activation = t.act;
    if (t.groups > 1) GroupGated(t.groups, p);
    p.c = p.d;
    RunPingPongTwice(p, t.bn, t.cluster, ran % 2 == 0, rng);
    if (t.n_major_b) {
      RunTwice(Canonicalize(p), jit::Sm90Config(128, t.bn, 2, 4, t.cluster), rng);
    }
    ++ran;
  }
  std::printf("gated wide ping-pong tiles: %d configs run twice\n", ran);
  EXPECT_EQ(ran, 9);
}

}  // namespace
}  // namespace jitgemm::support
