#include "tools/bench/mlp.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jitgemm/plan.h"
#include "tools/bench/cuda_util.h"
#include "tools/bench/glu_kernel.h"
#include "tools/bench/host_data.h"
#include "tools/bench/lt_baseline.h"

#define MLP_RETURN_IF_ERROR(expr)              \
  do {                                         \
    const ::absl::Status mlp_status_ = (expr); \
    if (!mlp_status_.ok()) return mlp_status_; \
  } while (0)

namespace jitgemm::bench {
namespace {

constexpr int kMaxSamples = 32;  // (row, group) pairs checked against float64
constexpr double kHiddenTolerance = 1e-2;
constexpr double kOutputTolerance = 1.5e-2;

bool Grouped(const MlpShape& s) { return s.groups > 1; }

// Host values of the block's operands, and the device copies every column reads.
struct MlpData {
  HostBuffer x, w_gate, w_up, w_down;
  DeviceBuffer dx, dw_gate, dw_up, dw_gate_up, dw_down;
  // Outputs, shared by the columns (each is checked right after its own run).
  DeviceBuffer h, y, gate, up;
};

// One sampled (row, group) pair: its hidden row and output row in float64.
struct Sample {
  int64_t row = 0, group = 0;
  std::vector<double> hidden, out;
};

// [W_gate | W_up] as the gated plan reads it: per group the K x 2H row-major
// rows side by side (x @ W weights), or torch.cat([W_gate, W_up]) of the
// (H, K) nn.Linear weights.
std::vector<unsigned char> GateUpBytes(const MlpShape& s, const MlpData& d) {
  const size_t half = d.w_gate.bytes.size();
  std::vector<unsigned char> out(2 * half);
  if (!Grouped(s)) {
    std::memcpy(out.data(), d.w_gate.bytes.data(), half);
    std::memcpy(out.data() + half, d.w_up.bytes.data(), half);
    return out;
  }
  const size_t row = static_cast<size_t>(s.hidden) * 2;  // bytes of one half's row
  for (int64_t r = 0; r < s.groups * s.model; ++r) {
    std::memcpy(out.data() + r * 2 * row, d.w_gate.bytes.data() + r * row, row);
    std::memcpy(out.data() + r * 2 * row + row, d.w_up.bytes.data() + r * row, row);
  }
  return out;
}

void ReferenceSample(const MlpShape& s, const MlpData& d, Sample* sample) {
  const int64_t K = s.model, H = s.hidden, G = s.groups, g = sample->group;
  const float* x = &d.x.values[(sample->row * G + g) * K];
  std::vector<double> gate(H, 0.0), up(H, 0.0);
  if (Grouped(s)) {  // W[g] is K x H row-major
    for (int64_t kk = 0; kk < K; ++kk) {
      const float* wg = &d.w_gate.values[(g * K + kk) * H];
      const float* wu = &d.w_up.values[(g * K + kk) * H];
      for (int64_t j = 0; j < H; ++j) {
        gate[j] += double{x[kk]} * wg[j];
        up[j] += double{x[kk]} * wu[j];
      }
    }
  } else {  // W is (H, K) row-major
    for (int64_t j = 0; j < H; ++j) {
      const float* wg = &d.w_gate.values[j * K];
      const float* wu = &d.w_up.values[j * K];
      double a = 0, b = 0;
      for (int64_t kk = 0; kk < K; ++kk) {
        a += double{x[kk]} * wg[kk];
        b += double{x[kk]} * wu[kk];
      }
      gate[j] = a;
      up[j] = b;
    }
  }
  const double alpha_up = MlpGatedProblem(s).epilogue.alpha;
  const double alpha_down = MlpDownProblem(s).epilogue.alpha;
  sample->hidden.resize(H);
  for (int64_t j = 0; j < H; ++j) {
    const double gv = alpha_up * gate[j], uv = alpha_up * up[j];
    sample->hidden[j] = gv / (1.0 + std::exp(-gv)) * uv;
  }
  sample->out.assign(K, 0.0);
  if (Grouped(s)) {  // W_down[g] is H x K row-major
    for (int64_t j = 0; j < H; ++j) {
      const float* wd = &d.w_down.values[(g * H + j) * K];
      for (int64_t o = 0; o < K; ++o) sample->out[o] += sample->hidden[j] * wd[o];
    }
  } else {  // W_down is (K, H) row-major
    for (int64_t o = 0; o < K; ++o) {
      const float* wd = &d.w_down.values[o * H];
      double acc = 0;
      for (int64_t j = 0; j < H; ++j) acc += sample->hidden[j] * wd[j];
      sample->out[o] = acc;
    }
  }
  for (double& v : sample->out) v *= alpha_down;
}

std::vector<Sample> ReferenceSamples(const MlpShape& s, const MlpData& d) {
  std::vector<Sample> samples;
  if (Grouped(s)) {
    uint64_t state = 12345;
    for (int i = 0; i < kMaxSamples; ++i) {
      Sample x;
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      x.row = i == 0 ? s.rows - 1 : static_cast<int64_t>((state >> 33) % s.rows);
      x.group = i == 0 ? s.groups - 1 : static_cast<int64_t>((state >> 13) % s.groups);
      samples.push_back(std::move(x));
    }
  } else {
    const int64_t n = std::min<int64_t>(s.rows, kMaxSamples);
    for (int64_t i = 0; i < n; ++i) {
      Sample x;
      x.row = n == s.rows ? i : (i * (s.rows - 1)) / (n - 1);
      samples.push_back(std::move(x));
    }
  }
  std::vector<std::thread> threads;
  const size_t workers = std::max(1u, std::thread::hardware_concurrency());
  for (size_t t = 0; t < workers; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < samples.size(); i += workers) ReferenceSample(s, d, &samples[i]);
    });
  }
  for (auto& t : threads) t.join();
  return samples;
}

// Normwise relative errors of the sampled rows of h and y.
struct Check {
  double hidden = 0, out = 0;
  bool ok() const { return hidden <= kHiddenTolerance && out <= kOutputTolerance; }
};

absl::StatusOr<Check> CheckOutputs(const MlpShape& s, const std::vector<Sample>& samples,
                                   const void* h, const void* y) {
  double hn = 0, hd = 0, yn = 0, yd = 0;
  const int64_t H = s.hidden, K = s.model;
  std::vector<uint16_t> hrow(H), yrow(K);
  for (const Sample& x : samples) {
    const int64_t at = x.row * s.groups + x.group;
    BENCH_CUDA(cudaMemcpy(hrow.data(), static_cast<const uint16_t*>(h) + at * H, H * 2,
                          cudaMemcpyDeviceToHost));
    BENCH_CUDA(cudaMemcpy(yrow.data(), static_cast<const uint16_t*>(y) + at * K, K * 2,
                          cudaMemcpyDeviceToHost));
    const std::vector<float> hv = DecodeElements(DataType::kBF16, hrow.data(), H);
    const std::vector<float> yv = DecodeElements(DataType::kBF16, yrow.data(), K);
    for (int64_t j = 0; j < H; ++j) {
      if (!std::isfinite(hv[j])) return Check{INFINITY, INFINITY};
      hn += (hv[j] - x.hidden[j]) * (hv[j] - x.hidden[j]);
      hd += x.hidden[j] * x.hidden[j];
    }
    for (int64_t o = 0; o < K; ++o) {
      if (!std::isfinite(yv[o])) return Check{INFINITY, INFINITY};
      yn += (yv[o] - x.out[o]) * (yv[o] - x.out[o]);
      yd += x.out[o] * x.out[o];
    }
  }
  return Check{std::sqrt(hn / std::max(hd, 1e-300)), std::sqrt(yn / std::max(yd, 1e-300))};
}

struct Column {
  std::string name;
  bool required = false;
  std::string unavailable;  // why the column could not be built
  std::vector<std::string> served;
  LaunchFn launch;
  const void* hidden = nullptr;  // where its h lands
  std::unique_ptr<Plan> gated, down;
  std::unique_ptr<LtBaseline> lt_gate, lt_up, lt_down;
  std::unique_ptr<CapturedGraph> graph;
  Check check;
  bool failed = false;
  std::vector<double> samples;
};

// jitgemm: the gated plan, then the down plan.
void BuildJitgemm(const MlpShape& s, const Options& options, MlpData& d, Column* col) {
  absl::StatusOr<Plan> gated = Plan::Create(MlpGatedProblem(s), options);
  absl::StatusOr<Plan> down = Plan::Create(MlpDownProblem(s), options);
  if (!gated.ok() || !down.ok()) {
    col->unavailable = (!gated.ok() ? gated.status() : down.status()).ToString();
    return;
  }
  col->gated = std::make_unique<Plan>(*std::move(gated));
  col->down = std::make_unique<Plan>(*std::move(down));
  for (const auto& [what, plan] :
       {std::pair{"gated", col->gated.get()}, std::pair{"down", col->down.get()}}) {
    col->served.push_back(
        absl::StrFormat("%s: %s %s", what, plan->info().backend, plan->info().kernel_name));
  }
  Plan* up_plan = col->gated.get();
  Plan* down_plan = col->down.get();
  col->hidden = d.h.get();
  col->launch = [up_plan, down_plan, &d](int, cudaStream_t stream) -> absl::Status {
    MLP_RETURN_IF_ERROR(
        up_plan->Run({.a = d.dx.get(), .b = d.dw_gate_up.get(), .d = d.h.get()}, stream));
    return down_plan->Run({.a = d.h.get(), .b = d.dw_down.get(), .d = d.y.get()}, stream);
  };
}

// cuBLAS as frameworks run the block: gate GEMM, up GEMM, silu*mul, down GEMM.
void BuildBaseline(const MlpShape& s, BenchContext& ctx, const GluKernel* glu, MlpData& d,
                   Column* col) {
  auto make = [&](const GemmProblem& p) {
    return LtBaseline::Create(ctx.lt(), p, LtBaselineEpilogue::kNone, ctx.workspace(),
                              ctx.workspace_bytes());
  };
  auto gate = make(MlpHalfProblem(s));
  auto up = make(MlpHalfProblem(s));
  auto down = make(MlpDownProblem(s));
  for (const auto* lt : {&gate, &up, &down}) {
    if (!lt->ok()) {
      col->unavailable = lt->status().ToString();
      return;
    }
  }
  col->lt_gate = *std::move(gate);
  col->lt_up = *std::move(up);
  col->lt_down = *std::move(down);
  col->served.push_back(absl::StrCat("gate, up: ", col->lt_gate->describe(),
                                     "; down: ", col->lt_down->describe(),
                                     "; silu*mul: ", GluKernelName(DataType::kBF16)));
  LtBaseline* lg = col->lt_gate.get();
  LtBaseline* lu = col->lt_up.get();
  LtBaseline* ld = col->lt_down.get();
  const int64_t count = s.rows * s.groups * s.hidden;
  col->hidden = d.gate.get();  // silu*mul writes h over the gate projection
  col->launch = [lg, lu, ld, glu, count, &d](int, cudaStream_t stream) -> absl::Status {
    MLP_RETURN_IF_ERROR(
        lg->Run(d.dx.get(), d.dw_gate.get(), nullptr, d.gate.get(), nullptr, stream));
    MLP_RETURN_IF_ERROR(lu->Run(d.dx.get(), d.dw_up.get(), nullptr, d.up.get(), nullptr, stream));
    MLP_RETURN_IF_ERROR(
        glu->Launch(d.gate.get(), d.up.get(), d.gate.get(), count, DataType::kBF16, stream));
    return ld->Run(d.gate.get(), d.dw_down.get(), nullptr, d.y.get(), nullptr, stream);
  };
}

absl::Status Upload(DeviceBuffer& dst, const std::vector<unsigned char>& bytes) {
  MLP_RETURN_IF_ERROR(dst.Allocate(bytes.size()));
  BENCH_CUDA(cudaMemcpy(dst.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return absl::OkStatus();
}

std::string Us(const Column& c) {
  if (!c.unavailable.empty()) return "n/a";
  if (c.failed) return "FAIL";
  return absl::StrFormat("%.1f", Summarize(c.samples).median_us);
}

// One row of the table: the shape's columns checked, timed and printed.
absl::Status RunShape(const MlpShape& s, BenchContext& ctx, const GluKernel* glu,
                      const TimingConfig& timing, const Options& base, std::FILE* out,
                      std::vector<std::string>* notes) {
  cudaStream_t stream = ctx.stream();
  const int64_t K = s.model, H = s.hidden, rows = s.rows * s.groups;
  MlpData d;
  d.x = RandomBuffer(DataType::kBF16, rows * K, 1601);
  d.w_gate = RandomBuffer(DataType::kBF16, s.groups * K * H, 1602);
  d.w_up = RandomBuffer(DataType::kBF16, s.groups * K * H, 1603);
  d.w_down = RandomBuffer(DataType::kBF16, s.groups * H * K, 1604);
  MLP_RETURN_IF_ERROR(Upload(d.dx, d.x.bytes));
  MLP_RETURN_IF_ERROR(Upload(d.dw_gate, d.w_gate.bytes));
  MLP_RETURN_IF_ERROR(Upload(d.dw_up, d.w_up.bytes));
  MLP_RETURN_IF_ERROR(Upload(d.dw_gate_up, GateUpBytes(s, d)));
  MLP_RETURN_IF_ERROR(Upload(d.dw_down, d.w_down.bytes));
  for (DeviceBuffer* b : {&d.h, &d.gate, &d.up}) MLP_RETURN_IF_ERROR(b->Allocate(rows * H * 2));
  MLP_RETURN_IF_ERROR(d.y.Allocate(rows * K * 2));
  const std::vector<Sample> samples = ReferenceSamples(s, d);

  std::vector<Column> cols(4);
  cols[0].name = "cuBLAS";
  cols[0].required = true;
  BuildBaseline(s, ctx, glu, d, &cols[0]);
  cols[1].name = "jitgemm";
  cols[1].required = true;
  BuildJitgemm(s, base, d, &cols[1]);
  Options cublas = base, jit = base;
  cublas.backend = BackendPolicy::kCublasOnly;
  jit.backend = BackendPolicy::kJitOnly;
  cols[2].name = "jitgemm cuBLAS route";
  BuildJitgemm(s, cublas, d, &cols[2]);
  cols[3].name = "jitgemm JIT only";
  BuildJitgemm(s, jit, d, &cols[3]);

  absl::Status result = absl::OkStatus();
  for (Column& c : cols) {
    if (!c.unavailable.empty()) {
      notes->push_back(absl::StrFormat("%s %s: unavailable: %s", s.label, c.name, c.unavailable));
      if (c.required && result.ok()) {
        result = absl::InternalError(absl::StrCat(s.label, " ", c.name, ": ", c.unavailable));
      }
      continue;
    }
    for (const std::string& line : c.served) {
      notes->push_back(absl::StrFormat("%s %s: %s", s.label, c.name, line));
    }
    // Check first, on poisoned outputs: one eager call.
    for (DeviceBuffer* b : {&d.h, &d.gate, &d.y}) {
      BENCH_CUDA(cudaMemsetAsync(b->get(), 0xff, b->bytes(), stream));
    }
    MLP_RETURN_IF_ERROR(c.launch(0, stream));
    BENCH_CUDA(cudaStreamSynchronize(stream));
    absl::StatusOr<Check> check = CheckOutputs(s, samples, c.hidden, d.y.get());
    if (!check.ok()) return check.status();
    c.check = *check;
    if (!c.check.ok()) {
      c.failed = true;
      const std::string what = absl::StrFormat(
          "%s %s: relative error h %.3g (tolerance %.3g), y %.3g (tolerance %.3g)", s.label, c.name,
          c.check.hidden, kHiddenTolerance, c.check.out, kOutputTolerance);
      notes->push_back(what);
      if (result.ok()) result = absl::InternalError(what);
      continue;
    }
    absl::StatusOr<std::unique_ptr<CapturedGraph>> g =
        CapturedGraph::Capture(c.launch, stream, timing);
    if (!g.ok()) {
      return absl::Status(g.status().code(),
                          absl::StrCat(s.label, " ", c.name, ": ", g.status().message()));
    }
    c.graph = *std::move(g);
  }
  for (int r = 0; r < timing.replays; ++r) {
    for (size_t i = 0; i < cols.size(); ++i) {
      Column& c = cols[ColumnOrder(r, i, cols.size())];
      if (c.graph == nullptr) continue;
      absl::StatusOr<double> us = c.graph->ReplayUs();
      if (!us.ok()) return us.status();
      c.samples.push_back(*us);
    }
  }
  auto speedup = [&](const Column& c) -> std::string {
    if (c.graph == nullptr || cols[0].graph == nullptr) return "";
    return absl::StrFormat(" (%.2fx)",
                           Summarize(cols[0].samples).median_us / Summarize(c.samples).median_us);
  };
  double worst_h = 0, worst_y = 0;
  for (const Column& c : cols) {
    if (c.graph == nullptr) continue;
    worst_h = std::max(worst_h, c.check.hidden);
    worst_y = std::max(worst_y, c.check.out);
  }
  std::fprintf(out, "| %s | %s | %s | %s | %s%s | %s%s | %.1e / %.1e |\n", s.label.c_str(),
               Us(cols[0]).c_str(), Us(cols[1]).c_str(),
               cols[1].graph != nullptr && cols[0].graph != nullptr
                   ? absl::StrFormat("%.2fx", Summarize(cols[0].samples).median_us /
                                                  Summarize(cols[1].samples).median_us)
                         .c_str()
                   : "",
               Us(cols[2]).c_str(), speedup(cols[2]).c_str(), Us(cols[3]).c_str(),
               speedup(cols[3]).c_str(), worst_h, worst_y);
  std::fflush(out);
  return result;
}

bool Selected(const MlpShape& s, const std::vector<std::string>& filters) {
  if (filters.empty()) return true;
  for (const std::string& f : filters) {
    if (absl::StrCat("mlp ", s.label).find(f) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::vector<MlpShape> MlpShapes() {
  return {{"seed001 grouped 2560x12 1024-3072-1024", 2560, 12, 1024, 3072},
          {"dense M=16 4096-14336-4096", 16, 1, 4096, 14336},
          {"dense M=128 4096-14336-4096", 128, 1, 4096, 14336},
          {"dense M=2048 4096-14336-4096", 2048, 1, 4096, 14336}};
}

GemmProblem MlpGatedProblem(const MlpShape& s) {
  GemmProblem p = MlpHalfProblem(s);
  p.epilogue.gate = Gate::kHalves;
  p.epilogue.activation = Activation::kSilu;
  if (Grouped(s)) {
    // [W_gate | W_up] per group: K x 2H row-major.
    p.b = {DataType::kBF16, Layout::kRowMajor, 2 * s.hidden, s.model * 2 * s.hidden};
  }  // dense: torch.cat([W_gate, W_up]) (2H, K) row-major is B column-major, ld K
  return Canonicalize(p);
}

namespace {

// One linear of the block, `in` -> `out` features: per group with x @ W
// weights (B row-major) for the grouped MLP, nn.Linear weights (B
// column-major) for the dense one.
GemmProblem MlpLinear(const MlpShape& s, int64_t in, int64_t out) {
  GemmProblem p;
  p.m = s.rows;
  p.n = out;
  p.k = in;
  p.epilogue.alpha = static_cast<float>(1.0 / std::sqrt(static_cast<double>(in)));
  if (Grouped(s)) {
    p.batch_count = s.groups;
    p.a = {DataType::kBF16, Layout::kRowMajor, s.groups * in, in};
    p.b = {DataType::kBF16, Layout::kRowMajor, out, in * out};
    p.d = {DataType::kBF16, Layout::kRowMajor, s.groups * out, out};
  } else {
    p.a = {DataType::kBF16, Layout::kRowMajor, in, kNoStride};
    p.b = {DataType::kBF16, Layout::kColMajor, in, kNoStride};  // W (out, in) row-major
    p.d = {DataType::kBF16, Layout::kRowMajor, out, kNoStride};
  }
  p.c = p.d;
  return Canonicalize(p);
}

}  // namespace

GemmProblem MlpHalfProblem(const MlpShape& s) { return MlpLinear(s, s.model, s.hidden); }

GemmProblem MlpDownProblem(const MlpShape& s) { return MlpLinear(s, s.hidden, s.model); }

absl::Status RunMlpSuite(BenchContext& ctx, const TimingConfig& timing, const Options& base,
                         const std::vector<std::string>& filters, std::FILE* out) {
  absl::StatusOr<std::unique_ptr<GluKernel>> glu = GluKernel::Create();
  if (!glu.ok()) return glu.status();
  std::fprintf(out,
               "\n## mlp: SwiGLU MLP blocks, bf16, µs per block (graph of %d blocks, median of %d "
               "replays); jitgemm = gated plan + down plan, cuBLAS = gate GEMM + up GEMM + "
               "silu*mul + down GEMM; speedup vs cuBLAS in ()\n\n",
               timing.launches, timing.replays);
  std::fprintf(out,
               "| block | cuBLAS | jitgemm | speedup | jitgemm cuBLAS route | jitgemm JIT only "
               "| max rel err h / y |\n");
  std::fprintf(out, "|---|---|---|---|---|---|---|\n");
  std::vector<std::string> notes;
  absl::Status result = absl::OkStatus();
  for (const MlpShape& s : MlpShapes()) {
    if (!Selected(s, filters)) continue;
    const absl::Status st = RunShape(s, ctx, glu->get(), timing, base, out, &notes);
    if (!st.ok()) {
      std::fprintf(out, "| %s | error: %s |\n", s.label.c_str(), st.ToString().c_str());
      if (result.ok()) result = st;
    }
  }
  std::fprintf(out, "\nserved by:\n");
  for (const std::string& n : notes) std::fprintf(out, "  %s\n", n.c_str());
  std::fflush(out);
  return result;
}

}  // namespace jitgemm::bench
