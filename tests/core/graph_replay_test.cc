// The graph-replay primitive's CPU part; its GPU part runs in the tuner's and
// jitgemm-bench's GPU tests (tests/tune/bench_support_test.cc).
#include "core/graph_replay.h"

#include "gtest/gtest.h"

namespace jitgemm {
namespace {

TEST(GraphReplayTest, MedianOfOddEvenAndNoSamples) {
  EXPECT_EQ(MedianOf({3.0, 1.0, 2.0, 9.0, 4.0}), 3.0);
  EXPECT_EQ(MedianOf({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(MedianOf({}), 0.0);
}

TEST(GraphReplayTest, DefaultsAreTheBenchmarkProtocol) {
  const GraphReplayConfig c;
  EXPECT_EQ(c.launches, 100);
  EXPECT_EQ(c.warmup, 3);
  EXPECT_EQ(c.mode, cudaStreamCaptureModeGlobal);
}

}  // namespace
}  // namespace jitgemm
