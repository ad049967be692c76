// The tuner's regimes on a GPU: the graph timer measures a backend streaming
// and resident, and a plan whose weight fits in the L2 is decided in both
// regimes unless the options declare one.
#include <memory>

#include "backends/cublas_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jitgemm/plan.h"
#include "support/gpu_env.h"
#include "tune/graph_timer.h"
#include "tune/regime.h"

namespace jitgemm::support {
namespace {

using ::testing::HasSubstr;

// x W^T with a 32 MiB weight: fits in an H100's 50 MiB L2.
GemmProblem WeightInL2(int64_t m) {
  GemmProblem p = MakeGemm(m, 4096, 4096, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  return Canonicalize(p);
}

TEST(TunerRegimesGpuTest, GraphTimerMeasuresBothRegimes) {
  JITGEMM_REQUIRE_GPU();
  const GemmProblem p = WeightInL2(64);
  auto timer = tune::GraphTimer::Create(p);
  ASSERT_TRUE(timer.ok()) << timer.status();
  EXPECT_GE((*timer)->copies(), 2) << "streaming needs copies to rotate over";
  auto backend = CreateCublasBackend(p, Options());
  ASSERT_TRUE(backend.ok()) << backend.status();
  for (tune::Regime regime : {tune::Regime::kStreaming, tune::Regime::kResident}) {
    auto first = (*timer)->FirstCallUs(**backend, regime);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_GT(*first, 0);
    auto graph = (*timer)->Capture(**backend, regime, 8);
    ASSERT_TRUE(graph.ok()) << graph.status();
    auto us = (*graph)->ReplayUs();
    ASSERT_TRUE(us.ok()) << us.status();
    EXPECT_GT(*us, 0);
    EXPECT_LT(*us, 100 * *first) << tune::RegimeName(regime);
  }
}

TEST(TunerRegimesGpuTest, AWeightInTheL2IsDecidedInBothRegimesUnlessDeclared) {
  JITGEMM_REQUIRE_GPU();
  const int64_t l2 = tune::CurrentDeviceL2Bytes();
  const GemmProblem p = WeightInL2(48);
  if (tune::ReusedBytes(p) > l2) GTEST_SKIP() << "a 32 MiB weight does not fit in this L2";
  Options o;
  o.tuning = TuningPolicy::kFast;
  auto both = Plan::Create(p, o);
  ASSERT_TRUE(both.ok()) << both.status();
  // A stored decision from an earlier run says the same.
  EXPECT_THAT(both->info().reason, HasSubstr("[streaming+resident;"));
  o.regime = TimingRegime::kStreaming;
  auto streaming = Plan::Create(p, o);
  ASSERT_TRUE(streaming.ok()) << streaming.status();
  EXPECT_THAT(streaming->info().reason, HasSubstr("[streaming;"));
}

}  // namespace
}  // namespace jitgemm::support
