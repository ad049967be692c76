#include "tools/bench/mlp.h"

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
#include "tools/bench/cuda_util.h"
#include "tools/bench/glu_kernel.h"
#include "tools/bench/host_data.h"
#include "tools/bench/lt_baseline.h"
#include "tools/bench/mlp_reference.h"

#define MLP_RETURN_IF_ERROR(expr)              \
  do {                                         \
    const ::absl::Status mlp_status_ = (expr); \
    if (!mlp_status_.ok()) return mlp_status_; \
  } while (0)

namespace jitgemm::bench {
namespace {

using mlp::Check;
using mlp::CheckOutputs;
using mlp::GateUpBytes;
using mlp::Grouped;
using mlp::kHiddenTolerance;
using mlp::kOutputTolerance;
using mlp::MlpData;
using mlp::ReferenceSamples;
using mlp::Sample;

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
