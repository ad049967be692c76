#include "tools/bench/chain.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jitgemm/plan.h"
#include "jitgemm/problem.h"
#include "tools/bench/cuda_util.h"
#include "tools/bench/host_data.h"

#define CHAIN_RETURN_IF_ERROR(expr)                \
  do {                                             \
    const ::absl::Status chain_status_ = (expr);   \
    if (!chain_status_.ok()) return chain_status_; \
  } while (0)

namespace jitgemm::bench {
namespace {

constexpr int kLayers = 8;
// Keeps activations O(1) through the chain: weights are uniform in [-1, 1).
constexpr float kAlpha = 0.027f;
constexpr int kSampleStride = 16;  // reference-checked columns of each layer

struct ChainColumn {
  std::string name;
  Options options;
  std::unique_ptr<Plan> plan;
  std::unique_ptr<CapturedGraph> graph;
  std::vector<double> samples;
};

// Relative Frobenius error of y = alpha * x W^T over every kSampleStride-th
// column, in float64 from the bf16 values the device read and wrote.
double LayerError(int64_t m, int64_t kHidden, const std::vector<float>& x,
                  const std::vector<float>& w_rows, const std::vector<float>& y) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t s = 0; s * kSampleStride < kHidden; ++s) {
      const int64_t n = s * kSampleStride;
      double acc = 0;
      for (int64_t k = 0; k < kHidden; ++k)
        acc += double{x[i * kHidden + k]} * w_rows[s * kHidden + k];
      acc *= kAlpha;
      const double d = y[i * kHidden + n] - acc;
      num += d * d;
      den += acc * acc;
    }
  }
  return std::sqrt(num / (den > 0 ? den : 1e-300));
}

absl::StatusOr<std::vector<float>> Download(const DeviceBuffer& b, int64_t elements) {
  std::vector<unsigned char> raw(elements * 2);
  BENCH_CUDA(cudaMemcpy(raw.data(), b.get(), raw.size(), cudaMemcpyDeviceToHost));
  return DecodeElements(DataType::kBF16, raw.data(), elements);
}

// One table: the chain at hidden size kHidden.
absl::Status RunChain(BenchContext& ctx, const TimingConfig& timing, const Options& base,
                      int64_t kHidden, std::FILE* out) {
  cudaStream_t stream = ctx.stream();
  TimingConfig t = timing;
  t.launches = std::max(kLayers, t.launches / kLayers * kLayers);
  // The layers' weights and the sampled rows the reference needs.
  // Every call of the graph has its own weight buffer (repetition r of the
  // chain uses copies r * kLayers ..): weights come from DRAM as in a model
  // whose layers do not fit L2, not from the previous replay's L2 lines.
  const int reps = t.launches / kLayers;
  std::vector<DeviceBuffer> weights(static_cast<size_t>(reps) * kLayers);
  std::vector<std::vector<float>> w_rows(kLayers);
  for (int l = 0; l < kLayers; ++l) {
    const HostBuffer w = RandomBuffer(DataType::kBF16, kHidden * kHidden, 1000 + l);
    for (int r = 0; r < reps; ++r) {
      DeviceBuffer& d = weights[static_cast<size_t>(r) * kLayers + l];
      CHAIN_RETURN_IF_ERROR(d.Allocate(w.bytes.size()));
      BENCH_CUDA(cudaMemcpy(d.get(), w.bytes.data(), w.bytes.size(), cudaMemcpyHostToDevice));
    }
    for (int64_t n = 0; n < kHidden; n += kSampleStride) {
      w_rows[l].insert(w_rows[l].end(), w.values.begin() + n * kHidden,
                       w.values.begin() + (n + 1) * kHidden);
    }
  }
  std::fprintf(out,
               "\n## chain: %d dependent linears x W_l^T (N = K = %lld, bf16, own weights), "
               "graph of %d calls, median of %d replays, µs per layer\n\n",
               kLayers, static_cast<long long>(kHidden), t.launches, t.replays);
  std::fprintf(out,
               "| M | cuBLAS | JIT PDL off | JIT PDL on | PDL gain | JIT PDL on + constant_b "
               "| gain vs PDL off | vs cuBLAS | max rel err |\n");
  std::fprintf(out, "|---|---|---|---|---|---|---|---|---|\n");
  absl::Status result = absl::OkStatus();
  std::vector<std::string> kernels;
  for (int64_t m : {1, 8, 16}) {
    GemmProblem p = MakeGemm(m, kHidden, kHidden, DataType::kBF16);
    p.b.layout = Layout::kColMajor;
    p.epilogue.alpha = kAlpha;
    p = Canonicalize(p);
    std::vector<DeviceBuffer> acts(kLayers + 1);
    for (auto& a : acts) CHAIN_RETURN_IF_ERROR(a.Allocate(m * kHidden * 2));
    const HostBuffer x0 = RandomBuffer(DataType::kBF16, m * kHidden, 77 + m);
    BENCH_CUDA(cudaMemcpy(acts[0].get(), x0.bytes.data(), x0.bytes.size(), cudaMemcpyHostToDevice));

    std::vector<ChainColumn> cols(4);
    cols[0].name = "cuBLAS";
    cols[0].options = base;
    cols[0].options.backend = BackendPolicy::kCublasOnly;
    for (int i = 1; i < 4; ++i) {
      cols[i].options = base;
      cols[i].options.backend = BackendPolicy::kJitOnly;
      cols[i].options.pdl = i >= 2;
      cols[i].options.constant_b = i == 3;
    }
    cols[1].name = "JIT PDL off";
    cols[2].name = "JIT PDL on";
    cols[3].name = "JIT constant_b";
    double max_err = 0;
    for (ChainColumn& c : cols) {
      absl::StatusOr<Plan> plan = Plan::Create(p, c.options);
      if (!plan.ok())
        return absl::Status(plan.status().code(),
                            absl::StrCat(c.name, ": ", plan.status().message()));
      c.plan = std::make_unique<Plan>(*std::move(plan));
      kernels.push_back(absl::StrFormat("M=%d %s: %s %s", m, c.name, c.plan->info().backend,
                                        c.plan->info().kernel_name));
      Plan* pl = c.plan.get();
      LaunchFn launch = [pl, &acts, &weights](int iter, cudaStream_t s) {
        const int l = iter % kLayers;
        GemmPointers ptrs;
        ptrs.a = acts[l].get();
        ptrs.b = weights[static_cast<size_t>(iter) % weights.size()].get();
        ptrs.d = acts[l + 1].get();
        return pl->Run(ptrs, s);
      };
      absl::StatusOr<std::unique_ptr<CapturedGraph>> g = CapturedGraph::Capture(launch, stream, t);
      if (!g.ok())
        return absl::Status(g.status().code(), absl::StrCat(c.name, ": ", g.status().message()));
      c.graph = *std::move(g);
      // Check the first and the last layer from the device's own inputs.
      BENCH_CUDA(cudaStreamSynchronize(stream));
      for (int l : {0, kLayers - 1}) {
        absl::StatusOr<std::vector<float>> x = Download(acts[l], m * kHidden);
        absl::StatusOr<std::vector<float>> y = Download(acts[l + 1], m * kHidden);
        if (!x.ok()) return x.status();
        if (!y.ok()) return y.status();
        const double err = LayerError(m, kHidden, *x, w_rows[l], *y);
        max_err = std::max(max_err, err);
        if (!(err < 1e-2)) {
          result = absl::InternalError(
              absl::StrFormat("chain M=%d %s layer %d: relative error %.3g", m, c.name, l, err));
        }
      }
    }
    for (int r = 0; r < t.replays; ++r) {
      for (size_t i = 0; i < cols.size(); ++i) {
        ChainColumn& c = cols[ColumnOrder(r, i, cols.size())];
        absl::StatusOr<double> us = c.graph->ReplayUs();
        if (!us.ok()) return us.status();
        c.samples.push_back(*us);
      }
    }
    double med[4];
    for (int i = 0; i < 4; ++i) med[i] = Summarize(cols[i].samples).median_us;
    std::fprintf(out, "| %lld | %.2f | %.2f | %.2f | %.2fx | %.2f | %.2fx | %.2fx | %.1e |\n",
                 static_cast<long long>(m), med[0], med[1], med[2], med[1] / med[2], med[3],
                 med[1] / med[3], med[0] / std::min(med[2], med[3]), max_err);
    std::fflush(out);
  }
  std::fprintf(out, "\nkernels:\n");
  for (const std::string& k : kernels) std::fprintf(out, "  %s\n", k.c_str());
  return result;
}

}  // namespace

absl::Status RunChainSuite(BenchContext& ctx, const TimingConfig& timing, const Options& base,
                           std::FILE* out) {
  absl::Status result = absl::OkStatus();
  // 2048: every warp's weight slice fits its register ring (the constant_b
  // kernels with bulk x); 4096: it does not.
  for (int64_t hidden : {2048, 4096}) {
    absl::Status s = RunChain(ctx, timing, base, hidden, out);
    if (!s.ok() && result.ok()) result = s;
  }
  return result;
}

}  // namespace jitgemm::bench
