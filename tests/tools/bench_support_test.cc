// jitgemm-bench's own machinery: the element conversions, the float64
// reference, the column order; and on a GPU (skipped
// without one) the tool's cuBLASLt baselines and the graph timer. The
// report and CSV, the suites, the activation kernel and manifest cases have
// their own tests.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/host_types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/bench/cuda_util.h"
#include "tools/bench/graph_timer.h"
#include "tools/bench/host_data.h"
#include "tools/bench/lt_baseline.h"
#include "tools/bench/reference.h"
#include "tools/bench/runner.h"
#include "tools/bench/suites.h"

namespace jitgemm::bench {
namespace {

using ::testing::HasSubstr;

float Bits(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

TEST(HostDataTest, HalfRoundTripsEveryFiniteValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (((h >> 10) & 0x1f) == 0x1f) continue;  // inf / NaN
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h) << h;
  }
}

TEST(HostDataTest, HalfRoundsToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14) * (1 - std::ldexp(1.0f, -12))), 0x0400);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(HalfToFloat(0x3555), Bits(0x3eaaa000));  // 0.333251953125
}

TEST(HostDataTest, Bf16RoundTripsAndRoundsToNearestEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (((h >> 7) & 0xff) == 0xff) continue;
    ASSERT_EQ(FloatToBf16(Bf16ToFloat(static_cast<uint16_t>(h))), h) << h;
  }
  EXPECT_EQ(FloatToBf16(Bits(0x3f808000)), 0x3f80);  // tie -> even
  EXPECT_EQ(FloatToBf16(Bits(0x3f818000)), 0x3f82);  // tie -> even
  EXPECT_EQ(FloatToBf16(Bits(0x3f808001)), 0x3f81);
}

TEST(HostDataTest, RandomBuffersHoldExactNonZeroValues) {
  for (DataType t : {DataType::kF32, DataType::kF16, DataType::kBF16}) {
    const HostBuffer b = RandomBuffer(t, 4099, 7);
    ASSERT_EQ(b.bytes.size(), 4099u * DataTypeSize(t));
    const std::vector<float> back = DecodeElements(t, b.bytes.data(), 4099);
    int zeros = 0;
    for (int i = 0; i < 4099; ++i) {
      ASSERT_EQ(back[i], b.values[i]);
      ASSERT_GE(b.values[i], -1.0f);
      ASSERT_LE(b.values[i], 1.0f);
      zeros += b.values[i] == 0.0f;
    }
    EXPECT_LT(zeros, 10);
    EXPECT_NE(RandomBuffer(t, 16, 8).values, RandomBuffer(t, 16, 9).values);
  }
}

GemmProblem Problem(int64_t m, int64_t n, int64_t k, Layout la, Layout lb, int64_t batch) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch_count = batch;
  p.a = {DataType::kF32, la, (la == Layout::kRowMajor ? k : m) + 3, kNoStride};
  p.b = {DataType::kF32, lb, (lb == Layout::kRowMajor ? n : k) + 1, kNoStride};
  p.d = {DataType::kF32, Layout::kRowMajor, n, kNoStride};
  if (batch > 1) {
    p.a.batch_stride = (la == Layout::kRowMajor ? m : k) * p.a.ld;
    p.b.batch_stride = 0;
    p.d.batch_stride = m * n;
  }
  p.c = p.d;
  return p;
}

// Over a full period every column takes every place, and follows every other
// column, equally often.
TEST(GraphTimerTest, ColumnOrderBalancesPlacesAndPredecessors) {
  for (size_t n = 1; n <= 7; ++n) {
    const int period = static_cast<int>(n % 2 == 0 ? n : 2 * n);
    std::map<std::pair<size_t, size_t>, int> places, pairs;
    for (int round = 0; round < period; ++round) {
      std::vector<int> in_round(n, 0);
      size_t before = n;
      for (size_t i = 0; i < n; ++i) {
        const size_t c = ColumnOrder(round, i, n);
        ASSERT_LT(c, n);
        ++in_round[c];
        ++places[{i, c}];
        if (before < n) ++pairs[{before, c}];
        before = c;
      }
      EXPECT_THAT(in_round, ::testing::Each(1)) << "n " << n << " round " << round;
    }
    const int per_place = period / static_cast<int>(n);
    EXPECT_EQ(places.size(), n * n) << n;
    for (const auto& [where, count] : places) EXPECT_EQ(count, per_place) << n;
    EXPECT_EQ(pairs.size(), n * (n - 1)) << n;
    for (const auto& [pair, count] : pairs) EXPECT_EQ(count, per_place) << n;
  }
  // Four columns: 0 1 3 2, then 1 2 0 3.
  EXPECT_EQ(ColumnOrder(0, 2, 4), 3u);
  EXPECT_EQ(ColumnOrder(1, 2, 4), 0u);
}

TEST(ReferenceTest, BlockedProductMatchesNaive) {
  const GemmProblem problems[] = {
      Problem(37, 600, 300, Layout::kRowMajor, Layout::kColMajor, 1),
      Problem(5, 1030, 129, Layout::kColMajor, Layout::kRowMajor, 1),
      Problem(1, 17, 3, Layout::kRowMajor, Layout::kRowMajor, 1),
      Problem(9, 40, 33, Layout::kColMajor, Layout::kColMajor, 3),
  };
  for (const GemmProblem& p : problems) {
    const HostBuffer a =
        RandomBuffer(DataType::kF32, BufferElements(p.a, p.batch_count, p.m, p.k), 1);
    const HostBuffer b =
        RandomBuffer(DataType::kF32, BufferElements(p.b, p.batch_count, p.k, p.n), 2);
    const std::vector<double> acc = ReferenceProduct(p, a.values.data(), b.values.data(), 3);
    ASSERT_EQ(acc.size(), static_cast<size_t>(p.batch_count * p.m * p.n));
    for (int64_t bt = 0; bt < p.batch_count; ++bt) {
      for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t j = 0; j < p.n; ++j) {
          double want = 0;
          for (int64_t kk = 0; kk < p.k; ++kk) {
            want += static_cast<double>(a.values[ElementIndex(p.a, bt, i, kk)]) *
                    b.values[ElementIndex(p.b, bt, kk, j)];
          }
          ASSERT_NEAR(acc[(bt * p.m + i) * p.n + j], want, 1e-12 * (1 + std::abs(want)))
              << p.m << "x" << p.n << "x" << p.k << " at " << bt << "," << i << "," << j;
        }
      }
    }
  }
}

TEST(ReferenceTest, RelativeErrorAppliesEpilogueAndCatchesNaN) {
  GemmProblem p = Problem(2, 3, 1, Layout::kRowMajor, Layout::kRowMajor, 1);
  p.epilogue.bias = BiasMode::kPerColumn;
  p.epilogue.activation = Activation::kRelu;
  const std::vector<double> acc = {1, -2, 3, -4, 5, -6};
  const float bias[] = {0.5f, 0.5f, -10.0f};
  const float exact_plain[] = {1, -2, 3, -4, 5, -6};
  const float exact_epi[] = {1.5f, 0, 0, 0, 5.5f, 0};
  EXPECT_EQ(RelativeError(p, acc, nullptr, bias, exact_plain, false), 0.0);
  EXPECT_EQ(RelativeError(p, acc, nullptr, bias, exact_epi, true), 0.0);
  EXPECT_GT(RelativeError(p, acc, nullptr, bias, exact_plain, true), 0.5);
  float with_nan[6] = {1.5f, 0, 0, 0, 5.5f, NAN};
  EXPECT_TRUE(std::isinf(RelativeError(p, acc, nullptr, bias, with_nan, true)));
  EXPECT_NEAR(ApplyActivation(Activation::kGeluTanh, 1.0), 0.8411919906, 1e-9);
  EXPECT_NEAR(ApplyActivation(Activation::kGeluErf, 1.0), 0.8413447461, 1e-9);
  EXPECT_NEAR(ApplyActivation(Activation::kSilu, 1.0), 0.7310585786, 1e-9);
}

// A gated problem's reference takes both halves of a 2N-column product:
// act(alpha * gate + bias[j]) * (alpha * up + bias[N + j]).
TEST(ReferenceTest, GatedProblemsMultiplyTheActivatedGateByTheUpHalf) {
  GemmProblem p = Problem(2, 2, 3, Layout::kRowMajor, Layout::kColMajor, 1);
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.alpha = 0.5f;
  p.epilogue.bias = BiasMode::kPerColumn;
  p.epilogue.activation = Activation::kRelu;
  p.b.ld = p.k;
  ASSERT_EQ(BColumns(p), 4);
  const HostBuffer a = RandomBuffer(DataType::kF32, BufferElements(p.a, 1, p.m, p.k), 3);
  const HostBuffer b = RandomBuffer(DataType::kF32, BufferElements(p.b, 1, p.k, 4), 4);
  const std::vector<double> acc = ReferenceProduct(p, a.values.data(), b.values.data(), 1);
  ASSERT_EQ(acc.size(), 2u * 4u);  // M x 2N
  for (int64_t j = 0; j < 4; ++j) {
    double want = 0;
    for (int64_t kk = 0; kk < p.k; ++kk) {
      want += static_cast<double>(a.values[ElementIndex(p.a, 0, 1, kk)]) *
              b.values[ElementIndex(p.b, 0, kk, j)];
    }
    EXPECT_NEAR(acc[4 + j], want, 1e-12) << "row 1, column " << j;
  }
  const float bias[] = {0.25f, -8.0f, 1.0f, 2.0f};
  std::vector<float> d(4);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      const double gate = std::max(0.5 * acc[i * 4 + j] + bias[j], 0.0);
      d[i * 2 + j] = static_cast<float>(gate * (0.5 * acc[i * 4 + 2 + j] + bias[2 + j]));
    }
  }
  EXPECT_LT(RelativeError(p, acc, nullptr, bias, d.data(), true), 1e-6);
  std::vector<float> ungated(4);  // act(gate) alone: the up half forgotten
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      ungated[i * 2 + j] = static_cast<float>(std::max(0.5 * acc[i * 4 + j] + bias[j], 0.0));
    }
  }
  EXPECT_GT(RelativeError(p, acc, nullptr, bias, ungated.data(), true), 0.1);
}

// Lt cannot transpose C: given a column-major C with a row-major D its
// baseline computed D 15% off (relative Frobenius error). It refuses before
// touching the handle.
TEST(LtBaselineTest, RefusesCOfAnotherLayoutOrType) {
  GemmProblem p = MakeGemm(64, 64, 64, DataType::kBF16);
  p.epilogue.beta = 1.0f;
  p.c.layout = Layout::kColMajor;
  p.c.ld = 64;
  auto lt = LtBaseline::Create(nullptr, p, LtBaselineEpilogue::kNone, nullptr, 0);
  ASSERT_FALSE(lt.ok());
  EXPECT_EQ(lt.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(lt.status().message()), HasSubstr("C of D's layout and type"));
  p.c.layout = Layout::kRowMajor;
  p.c.type = DataType::kF32;
  lt = LtBaseline::Create(nullptr, p, LtBaselineEpilogue::kNone, nullptr, 0);
  EXPECT_EQ(lt.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(LtBaselineTest, PointerAlignmentIsCudaMallocsUnlessTheOptionsPromiseLessThan16) {
  Options options;
  EXPECT_EQ(BaselinePointerAlignment(options), 256);
  for (int bytes : {1, 2, 4, 8}) {
    options.pointer_alignment = bytes;
    EXPECT_EQ(BaselinePointerAlignment(options), bytes);
  }
}

// ---------------------------------------------------------------------------
// On a GPU.

bool HasDevice(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) *why = cudaGetErrorString(err);
  if (err == cudaSuccess && count == 0) *why = "cudaGetDeviceCount returned 0";
  return err == cudaSuccess && count > 0;
}

#define REQUIRE_DEVICE()                                             \
  do {                                                               \
    std::string why;                                                 \
    if (!HasDevice(&why)) GTEST_SKIP() << "no CUDA device: " << why; \
  } while (0)

TEST(BenchGpuTest, LtBaselinesMatchReferenceAndTime) {
  REQUIRE_DEVICE();
  absl::StatusOr<std::unique_ptr<BenchContext>> ctx = BenchContext::Create(0);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  BenchCase c = MakeSuite("S2")->front();  // f16 64x256x128, bias + relu
  const GemmProblem& p = c.problem;
  const HostBuffer a = RandomBuffer(p.a.type, BufferElements(p.a, 1, p.m, p.k), 1);
  const HostBuffer b = RandomBuffer(p.b.type, BufferElements(p.b, 1, p.k, p.n), 2);
  const HostBuffer bias = RandomBuffer(p.d.type, p.n, 3);
  DeviceBuffer da, db, dd, dbias;
  ASSERT_TRUE(da.Allocate(a.bytes.size()).ok());
  ASSERT_TRUE(db.Allocate(b.bytes.size()).ok());
  ASSERT_TRUE(dd.Allocate(p.m * p.n * 2).ok());
  ASSERT_TRUE(dbias.Allocate(bias.bytes.size()).ok());
  cudaMemcpy(da.get(), a.bytes.data(), a.bytes.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(db.get(), b.bytes.data(), b.bytes.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(dbias.get(), bias.bytes.data(), bias.bytes.size(), cudaMemcpyHostToDevice);
  const std::vector<double> acc = ReferenceProduct(p, a.values.data(), b.values.data());

  for (LtBaselineEpilogue epi :
       {LtBaselineEpilogue::kNone, LtBaselineEpilogue::kReluBias, LtBaselineEpilogue::kGeluBias}) {
    GemmProblem q = p;  // bias + relu, or bias + tanh-GELU for GELU_BIAS
    if (epi == LtBaselineEpilogue::kGeluBias) q.epilogue.activation = Activation::kGeluTanh;
    absl::StatusOr<std::unique_ptr<LtBaseline>> lt =
        LtBaseline::Create((*ctx)->lt(), q, epi, (*ctx)->workspace(), (*ctx)->workspace_bytes());
    ASSERT_TRUE(lt.ok()) << lt.status();
    cudaMemset(dd.get(), 0xff, p.m * p.n * 2);
    ASSERT_TRUE((*lt)->Run(da.get(), db.get(), nullptr, dd.get(), dbias.get(), nullptr).ok());
    std::vector<unsigned char> raw(p.m * p.n * 2);
    ASSERT_EQ(cudaMemcpy(raw.data(), dd.get(), raw.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    const std::vector<float> d = DecodeElements(p.d.type, raw.data(), p.m * p.n);
    EXPECT_LT(RelativeError(q, acc, nullptr, bias.values.data(), d.data(),
                            epi != LtBaselineEpilogue::kNone),
              Tolerance(p.d.type, false))
        << (*lt)->describe();
    TimingConfig timing;
    timing.launches = 10;
    timing.replays = 3;
    absl::StatusOr<Timing> us = TimeWithGraph(
        [&](int, cudaStream_t s) {
          return (*lt)->Run(da.get(), db.get(), nullptr, dd.get(), dbias.get(), s);
        },
        (*ctx)->stream(), timing);
    ASSERT_TRUE(us.ok()) << us.status();
    EXPECT_GT(us->median_us, 0.0);
    EXPECT_LT(us->median_us, 1000.0);
    EXPECT_LE(us->min_us, us->median_us);
    EXPECT_GE(us->max_us, us->median_us);
  }
}

// Runs the plain cuBLASLt baseline of `p` (`batches` matrices, D poisoned
// first) and checks D against the float64 product. With `offset` elements,
// every pointer starts that far past cudaMalloc's and the baseline is told
// the alignment of 16-bit elements that far apart.
void ExpectPlainLtBaselineMatchesReference(GemmProblem p, int64_t batches, uint64_t seed,
                                           int64_t offset = 0) {
  absl::StatusOr<std::unique_ptr<BenchContext>> ctx = BenchContext::Create(0);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  p = Canonicalize(p);
  const HostBuffer a = RandomBuffer(p.a.type, BufferElements(p.a, batches, p.m, p.k), seed);
  const HostBuffer b = RandomBuffer(p.b.type, BufferElements(p.b, batches, p.k, p.n), seed + 1);
  const int64_t d_elements = BufferElements(p.d, batches, p.m, p.n);
  const size_t skip = offset * 2;
  DeviceBuffer da, db, dd;
  ASSERT_TRUE(da.Allocate(a.bytes.size() + skip).ok());
  ASSERT_TRUE(db.Allocate(b.bytes.size() + skip).ok());
  ASSERT_TRUE(dd.Allocate(d_elements * 2 + skip).ok());
  char* pa = static_cast<char*>(da.get()) + skip;
  char* pb = static_cast<char*>(db.get()) + skip;
  char* pd = static_cast<char*>(dd.get()) + skip;
  cudaMemcpy(pa, a.bytes.data(), a.bytes.size(), cudaMemcpyHostToDevice);
  cudaMemcpy(pb, b.bytes.data(), b.bytes.size(), cudaMemcpyHostToDevice);
  const int alignment = offset == 0 ? 256 : static_cast<int>(skip & -skip);
  absl::StatusOr<std::unique_ptr<LtBaseline>> lt =
      LtBaseline::Create((*ctx)->lt(), p, LtBaselineEpilogue::kNone, (*ctx)->workspace(),
                         (*ctx)->workspace_bytes(), alignment);
  ASSERT_TRUE(lt.ok()) << lt.status();
  cudaMemset(pd, 0xff, d_elements * 2);  // NaN: an unwritten element fails
  ASSERT_TRUE((*lt)->Run(pa, pb, nullptr, pd, nullptr, nullptr).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << (*lt)->describe();
  std::vector<unsigned char> raw(d_elements * 2);
  ASSERT_EQ(cudaMemcpy(raw.data(), pd, raw.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  const std::vector<float> d = DecodeElements(p.d.type, raw.data(), d_elements);
  const std::vector<double> acc = ReferenceProduct(p, a.values.data(), b.values.data());
  EXPECT_LT(RelativeError(p, acc, nullptr, nullptr, d.data(), false), Tolerance(p.d.type, false))
      << (*lt)->describe();
}

// A column-major D runs as its transpose with A and B swapped, as the library
// plans it; the plain product must match the reference in D's own order.
TEST(BenchGpuTest, LtBaselineOfAColumnMajorDMatchesReference) {
  REQUIRE_DEVICE();
  GemmProblem p = MakeGemm(96, 160, 64, DataType::kF16);
  p.b.layout = Layout::kColMajor;
  p.d.layout = Layout::kColMajor;
  ExpectPlainLtBaselineMatchesReference(p, 1, 4);
}

// D rows 4099 elements long and batches 532870 apart: told nothing, Lt's
// heuristic assumed 256-byte alignment and its algorithm faulted. The baseline
// tells it what the lines keep (core/operand_alignment.h).
TEST(BenchGpuTest, LtBaselineOfAnOddStridedDMatchesReference) {
  REQUIRE_DEVICE();
  GemmProblem p = MakeGemm(130, 4096, 16, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  p.batch_count = 4;
  p.a.batch_stride = 2080;
  p.b.batch_stride = 65536;
  p.d = {DataType::kBF16, Layout::kRowMajor, 4099, 532870};
  ExpectPlainLtBaselineMatchesReference(p, 4, 6);
}

// A case planned with Options::pointer_alignment 2 gets a baseline told so,
// and it runs on pointers one element past cudaMalloc's.
TEST(BenchGpuTest, LtBaselineOfElementAlignedPointersMatchesReference) {
  REQUIRE_DEVICE();
  GemmProblem p = MakeGemm(520, 1000, 264, DataType::kBF16);
  p.b.layout = Layout::kColMajor;
  ExpectPlainLtBaselineMatchesReference(p, 1, 8, 1);
}

TEST(BenchGpuTest, TimerReportsAFailureInsideCapture) {
  REQUIRE_DEVICE();
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  TimingConfig timing;
  timing.warmup = 0;
  absl::StatusOr<Timing> us = TimeWithGraph(
      [](int iter, cudaStream_t) {
        return iter == 3 ? absl::InternalError("boom") : absl::OkStatus();
      },
      s, timing);
  ASSERT_FALSE(us.ok());
  EXPECT_THAT(std::string(us.status().message()), HasSubstr("call 3 inside graph capture"));
  cudaStreamQuery(s);  // the stream is usable again
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace jitgemm::bench
