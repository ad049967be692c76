#include "tools/bench/runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "jitgemm/plan.h"
#include "tools/bench/glu_kernel.h"
#include "tools/bench/host_data.h"
#include "tools/bench/lt_baseline.h"
#include "tools/bench/reference.h"

namespace jitgemm::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReservedBytes = size_t{1} << 30;  // plans, modules, workspaces

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// The inputs and output of one case, on host and device. B has `rotate`
// identical device copies that consecutive calls cycle through.
struct CaseData {
  GemmProblem p;
  Options options;  // of the jitgemm columns
  HostBuffer a, b, c, bias;
  DeviceBuffer da, dc, dd, dbias;
  std::vector<DeviceBuffer> db;
  int64_t d_elements = 0;
  // Gated problems: the [gate | up] product the cuBLAS columns write first
  // (HiddenProblem), and its element count.
  DeviceBuffer dh;
  int64_t h_elements = 0;
  // How many of the B copies the calls cycle through: read when a graph is
  // captured, so each graph keeps the rotation it was captured with.
  int rotation = 1;

  const void* A() const { return da.get(); }
  const void* B(int iter) const { return db[iter % rotation].get(); }
  const void* C() const { return p.epilogue.beta != 0.0f ? dc.get() : nullptr; }
  void* D() const { return dd.get(); }
  void* H() const { return dh.get(); }
  const void* Bias() const { return p.epilogue.bias != BiasMode::kNone ? dbias.get() : nullptr; }
  size_t DBytes() const { return d_elements * DataTypeSize(p.d.type); }
  size_t HBytes() const { return h_elements * DataTypeSize(p.d.type); }
};

bool Gated(const GemmProblem& p) { return p.epilogue.gate == Gate::kHalves; }

// A problem's product alone (alpha kept; no C, bias, activation or gate)
// into a packed row-major buffer of D's type with `cols` columns: the whole
// [gate | up] product of a gated problem (cols = 2N), or one half (N).
GemmProblem PlainProduct(const GemmProblem& p, int64_t cols) {
  GemmProblem h = p;
  h.n = cols;
  h.epilogue = Epilogue{};
  h.epilogue.alpha = p.epilogue.alpha;
  h.d = {p.d.type, Layout::kRowMajor, cols, p.batch_count > 1 ? p.m * cols : kNoStride};
  h.c = h.d;
  return h;
}

GemmProblem HiddenProblem(const GemmProblem& p) { return PlainProduct(p, BColumns(p)); }

const void* Offset(const void* base, int64_t elements, DataType type) {
  return static_cast<const char*>(base) + elements * DataTypeSize(type);
}

absl::Status Upload(const HostBuffer& h, DeviceBuffer& d) {
  BENCH_CUDA(cudaMemcpy(d.get(), h.bytes.data(), h.bytes.size(), cudaMemcpyHostToDevice));
  return absl::OkStatus();
}

// B copies whose sum exceeds twice the L2 (at least 2), so that streaming
// calls find no B in it.
int StreamingCopies(size_t b_bytes) {
  int device = 0, l2 = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess) {
    cudaGetLastError();
    l2 = 64 << 20;
  }
  const size_t b = std::max<size_t>(b_bytes, 1);
  return static_cast<int>(
      std::clamp<size_t>((2 * static_cast<size_t>(l2) + b - 1) / b + 1, 2, 100));
}

absl::Status Prepare(const BenchCase& bc, int rotate, bool regimes, CaseData& data,
                     int* rotate_used, int* streaming_copies) {
  const GemmProblem& p = bc.problem;
  data.p = p;
  const int64_t batches = p.batch_count;
  const uint64_t seed = std::hash<std::string>()(bc.suite + bc.label);
  data.a = RandomBuffer(p.a.type, BufferElements(p.a, batches, p.m, p.k), seed + 1);
  data.b = RandomBuffer(p.b.type, BufferElements(p.b, batches, p.k, BColumns(p)), seed + 2);
  if (p.epilogue.beta != 0.0f) {
    data.c = RandomBuffer(p.c.type, BufferElements(p.c, batches, p.m, p.n), seed + 3);
  }
  if (p.epilogue.bias != BiasMode::kNone) {
    const int64_t len = p.epilogue.bias == BiasMode::kPerColumn ? BColumns(p) : p.m;
    data.bias =
        RandomBuffer(p.d.type, p.epilogue.bias_batch_stride * (batches - 1) + len, seed + 4);
  }
  data.d_elements = BufferElements(p.d, batches, p.m, p.n);
  if (Gated(p)) data.h_elements = batches * p.m * BColumns(p);

  size_t free_bytes = 0, total_bytes = 0;
  BENCH_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  const size_t fixed = data.a.bytes.size() + data.c.bytes.size() + data.bias.bytes.size() +
                       data.DBytes() + data.HBytes() + kReservedBytes;
  const size_t b_bytes = data.b.bytes.size();
  if (free_bytes < fixed + b_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "needs %d MiB of device memory, %d MiB free", (fixed + b_bytes) >> 20, free_bytes >> 20));
  }
  const size_t fit = (free_bytes - fixed) / std::max<size_t>(b_bytes, 1);
  *rotate_used = static_cast<int>(std::min<size_t>(std::max(rotate, 1), fit));
  *streaming_copies =
      regimes ? static_cast<int>(std::min<size_t>(StreamingCopies(b_bytes), fit)) : 0;
  const int copies = std::max(*rotate_used, *streaming_copies);
  data.rotation = *rotate_used;

  JITGEMM_RETURN_IF_ERROR(data.da.Allocate(data.a.bytes.size()));
  JITGEMM_RETURN_IF_ERROR(Upload(data.a, data.da));
  data.db.resize(copies);
  for (int i = 0; i < copies; ++i) {
    JITGEMM_RETURN_IF_ERROR(data.db[i].Allocate(b_bytes));
    if (i == 0) {
      JITGEMM_RETURN_IF_ERROR(Upload(data.b, data.db[0]));
    } else {
      BENCH_CUDA(cudaMemcpy(data.db[i].get(), data.db[0].get(), b_bytes, cudaMemcpyDeviceToDevice));
    }
  }
  JITGEMM_RETURN_IF_ERROR(data.dd.Allocate(data.DBytes()));
  if (data.h_elements > 0) JITGEMM_RETURN_IF_ERROR(data.dh.Allocate(data.HBytes()));
  if (!data.c.bytes.empty()) {
    JITGEMM_RETURN_IF_ERROR(data.dc.Allocate(data.c.bytes.size()));
    JITGEMM_RETURN_IF_ERROR(Upload(data.c, data.dc));
  }
  if (!data.bias.bytes.empty()) {
    JITGEMM_RETURN_IF_ERROR(data.dbias.Allocate(data.bias.bytes.size()));
    JITGEMM_RETURN_IF_ERROR(Upload(data.bias, data.dbias));
  }
  BENCH_CUDA(cudaDeviceSynchronize());
  return absl::OkStatus();
}

// One column ready to run: the call and what it is.
struct Column {
  LaunchFn launch;
  std::string plan;
  double create_ms = -1;
};

// A gated problem as frameworks run it: the gate and up linears (Lt's BIAS
// epilogue where there is a bias) into the two halves of the hidden buffer,
// then silu(gate) * up into D.
absl::StatusOr<Column> GatedAddmmColumn(const CaseData& data, BenchContext& ctx) {
  const GemmProblem& p = data.p;
  if (p.epilogue.activation != Activation::kSilu || p.batch_count != 1 || p.d.ld != p.n ||
      p.d.layout != Layout::kRowMajor) {
    return absl::UnimplementedError(
        "addmm_act serves gated problems with silu and one packed row-major D");
  }
  GemmProblem half = PlainProduct(p, p.n);
  half.epilogue.bias = p.epilogue.bias;
  half.epilogue.bias_batch_stride = p.epilogue.bias_batch_stride;
  const bool has_bias = p.epilogue.bias == BiasMode::kPerColumn;
  absl::StatusOr<std::unique_ptr<LtBaseline>> made = LtBaseline::Create(
      ctx.lt(), half, has_bias ? LtBaselineEpilogue::kBias : LtBaselineEpilogue::kNone,
      ctx.workspace(), ctx.workspace_bytes());
  if (!made.ok()) return made.status();
  absl::StatusOr<const GluKernel*> glu = ctx.Glu();
  if (!glu.ok()) return glu.status();
  Column col;
  col.plan = absl::StrCat("2 x ", (*made)->describe(), " + ", GluKernelName(p.d.type));
  std::shared_ptr<LtBaseline> l(std::move(*made));
  const CaseData* d = &data;
  // Where the up half starts in B, and in the bias.
  const int64_t b_up = ElementIndex(p.b, 0, 0, p.n);
  col.launch = [l, glu = *glu, d, b_up](int i, cudaStream_t s) -> absl::Status {
    const GemmProblem& q = d->p;
    const int64_t count = q.m * q.n;
    void* gate = d->H();
    void* up = const_cast<void*>(Offset(d->H(), count, q.d.type));
    const void* bias = d->Bias();
    absl::Status st = l->Run(d->A(), d->B(i), nullptr, gate, bias, s);
    if (!st.ok()) return st;
    st = l->Run(d->A(), Offset(d->B(i), b_up, q.b.type), nullptr, up,
                bias != nullptr ? Offset(bias, q.n, q.d.type) : nullptr, s);
    if (!st.ok()) return st;
    return glu->Launch(gate, up, d->D(), count, q.d.type, s);
  };
  return col;
}

absl::StatusOr<Column> MakeColumn(Impl impl, const CaseData& data, BenchContext& ctx) {
  const GemmProblem& p = data.p;
  Column col;
  GemmProblem plain = p;
  plain.epilogue.bias = BiasMode::kNone;
  plain.epilogue.bias_batch_stride = 0;
  plain.epilogue.activation = Activation::kNone;
  const CaseData* d = &data;

  auto lt = [&](const GemmProblem& problem,
                LtBaselineEpilogue epi) -> absl::StatusOr<std::shared_ptr<LtBaseline>> {
    absl::StatusOr<std::unique_ptr<LtBaseline>> made =
        LtBaseline::Create(ctx.lt(), problem, epi, ctx.workspace(), ctx.workspace_bytes());
    if (!made.ok()) return made.status();
    return std::shared_ptr<LtBaseline>(std::move(*made));
  };

  switch (impl) {
    case Impl::kCublasMm: {
      if (Gated(p)) {  // the [gate | up] product, as a framework's first GEMM
        absl::StatusOr<std::shared_ptr<LtBaseline>> l =
            lt(HiddenProblem(p), LtBaselineEpilogue::kNone);
        if (!l.ok()) return l.status();
        col.plan = absl::StrCat((*l)->describe(), " ([gate | up] product alone)");
        col.launch = [l = *l, d](int i, cudaStream_t s) {
          return l->Run(d->A(), d->B(i), nullptr, d->H(), nullptr, s);
        };
        return col;
      }
      absl::StatusOr<std::shared_ptr<LtBaseline>> l = lt(plain, LtBaselineEpilogue::kNone);
      if (!l.ok()) return l.status();
      col.plan = (*l)->describe();
      col.launch = [l = *l, d](int i, cudaStream_t s) {
        return l->Run(d->A(), d->B(i), d->C(), d->D(), nullptr, s);
      };
      return col;
    }
    case Impl::kCublasLoop: {
      if (Gated(p)) return absl::UnimplementedError("cublas_loop does not serve gated problems");
      GemmProblem one = plain;
      one.batch_count = 1;
      one.a.batch_stride = one.b.batch_stride = one.c.batch_stride = one.d.batch_stride = kNoStride;
      absl::StatusOr<std::shared_ptr<LtBaseline>> l = lt(one, LtBaselineEpilogue::kNone);
      if (!l.ok()) return l.status();
      col.plan = absl::StrCat(p.batch_count, " x ", (*l)->describe());
      col.launch = [l = *l, d](int i, cudaStream_t s) -> absl::Status {
        const GemmProblem& q = d->p;
        const auto stride = [](const Operand& op) {
          return op.batch_stride == kNoStride ? int64_t{0} : op.batch_stride;
        };
        for (int64_t g = 0; g < q.batch_count; ++g) {
          const void* c = d->C() ? Offset(d->C(), g * stride(q.c), q.c.type) : nullptr;
          absl::Status s1 = l->Run(
              Offset(d->A(), g * stride(q.a), q.a.type), Offset(d->B(i), g * stride(q.b), q.b.type),
              c, const_cast<void*>(Offset(d->D(), g * stride(q.d), q.d.type)), nullptr, s);
          if (!s1.ok()) return s1;
        }
        return absl::OkStatus();
      };
      return col;
    }
    case Impl::kAddmmAct: {
      if (Gated(p)) return GatedAddmmColumn(data, ctx);
      // F.linear + F.relu / F.gelu / F.silu: Lt's BIAS epilogue (or no bias),
      // then the activation as a separate in-place pass over D.
      if (p.epilogue.bias == BiasMode::kPerRow || p.batch_count != 1 || p.d.ld != p.n ||
          p.d.layout != Layout::kRowMajor) {
        return absl::UnimplementedError(
            "addmm_act needs one packed row-major D and no bias or a per-column one");
      }
      GemmProblem biased = p;
      biased.epilogue.activation = Activation::kNone;
      const bool has_bias = p.epilogue.bias == BiasMode::kPerColumn;
      absl::StatusOr<std::shared_ptr<LtBaseline>> l =
          lt(biased, has_bias ? LtBaselineEpilogue::kBias : LtBaselineEpilogue::kNone);
      if (!l.ok()) return l.status();
      absl::StatusOr<const ActivationKernel*> act = ctx.Activations();
      if (!act.ok()) return act.status();
      col.plan = (*l)->describe();
      if (p.epilogue.activation != Activation::kNone) {
        absl::StrAppend(&col.plan, " + NVRTC ", ActivationName(p.epilogue.activation), " kernel");
      }
      col.launch = [l = *l, act = *act, d](int i, cudaStream_t s) -> absl::Status {
        absl::Status st = l->Run(d->A(), d->B(i), d->C(), d->D(), d->Bias(), s);
        if (!st.ok()) return st;
        return act->Launch(d->D(), d->p.m * d->p.n, d->p.d.type, d->p.epilogue.activation, s);
      };
      return col;
    }
    case Impl::kLtBiasAct: {
      if (!LtFusesEpilogue(p)) {
        return absl::UnimplementedError(
            "cuBLASLt fuses only a per-column bias with relu or gelu_tanh");
      }
      absl::StatusOr<std::shared_ptr<LtBaseline>> l =
          lt(p, p.epilogue.activation == Activation::kRelu ? LtBaselineEpilogue::kReluBias
                                                           : LtBaselineEpilogue::kGeluBias);
      if (!l.ok()) return l.status();
      col.plan = (*l)->describe();
      col.launch = [l = *l, d](int i, cudaStream_t s) {
        return l->Run(d->A(), d->B(i), d->C(), d->D(), d->Bias(), s);
      };
      return col;
    }
    case Impl::kJit:
    case Impl::kAuto: {
      Options options = data.options;
      options.backend = impl == Impl::kJit ? BackendPolicy::kJitOnly : BackendPolicy::kAuto;
      const Clock::time_point t0 = Clock::now();
      absl::StatusOr<Plan> plan = Plan::Create(p, options);
      col.create_ms = 1000.0 * Seconds(t0);
      if (!plan.ok()) {
        return absl::Status(plan.status().code(),
                            absl::StrCat("Plan::Create: ", plan.status().message()));
      }
      const PlanInfo& info = plan->info();
      col.plan =
          absl::StrCat(info.backend, " ", info.kernel_name, info.compiled ? " (compiled)" : "");
      auto shared = std::make_shared<Plan>(*std::move(plan));
      col.launch = [shared, d](int i, cudaStream_t s) {
        GemmPointers ptrs;
        ptrs.a = d->A();
        ptrs.b = d->B(i);
        ptrs.c = d->C();
        ptrs.d = d->D();
        ptrs.bias = d->Bias();
        return shared->Run(ptrs, s);
      };
      return col;
    }
  }
  return absl::InvalidArgumentError("unknown column");
}

// Runs call 0 once into a NaN-filled output and measures the error: D, or
// for cublas_mm on a gated problem the [gate | up] product it writes instead.
absl::Status Check(const Column& col, Impl impl, const CaseData& data,
                   const std::vector<double>& acc, cudaStream_t stream, CellResult& cell) {
  const bool hidden = Gated(data.p) && impl == Impl::kCublasMm;
  const GemmProblem checked = hidden ? HiddenProblem(data.p) : data.p;
  void* out = hidden ? data.H() : data.D();
  const int64_t elements = hidden ? data.h_elements : data.d_elements;
  const size_t bytes = hidden ? data.HBytes() : data.DBytes();
  BENCH_CUDA(cudaMemsetAsync(out, 0xff, bytes, stream));  // NaN in every type
  absl::Status s = col.launch(0, stream);
  if (!s.ok()) return s;
  BENCH_CUDA(cudaStreamSynchronize(stream));
  std::vector<unsigned char> raw(bytes);
  BENCH_CUDA(cudaMemcpy(raw.data(), out, raw.size(), cudaMemcpyDeviceToHost));
  const std::vector<float> d = DecodeElements(checked.d.type, raw.data(), elements);
  cell.rel_err = RelativeError(checked, acc, data.c.values.data(), data.bias.values.data(),
                               d.data(), ComputesEpilogue(impl, checked));
  return absl::OkStatus();
}

// Clears a non-sticky error left by a failed call; reports a sticky one.
bool ContextBroken(std::string* why) {
  const cudaError_t err = cudaGetLastError();
  if (!IsStickyError(err)) return false;
  *why = absl::StrCat(cudaGetErrorName(err), ": ", cudaGetErrorString(err));
  return true;
}

}  // namespace

CaseResult RunCase(const BenchCase& bc, const RunConfig& config, BenchContext& ctx) {
  CaseResult result;
  result.bench_case = bc;
  const std::string name = absl::StrCat(bc.suite, " ", bc.label);
  std::fprintf(stderr, "[%s]\n", name.c_str());

  CaseData data;
  data.options = CaseOptions(bc, config.plan_options, config.tuning);
  result.status = Prepare(bc, config.rotate > 0 ? config.rotate : bc.rotate, config.regimes, data,
                          &result.rotate, &result.streaming_copies);
  if (!result.status.ok()) {
    std::fprintf(stderr, "  setup failed: %s\n", result.status.ToString().c_str());
    std::string why;
    result.fatal = ContextBroken(&why);
    return result;
  }
  if (result.rotate < std::max(config.rotate > 0 ? config.rotate : bc.rotate, 1)) {
    std::fprintf(stderr, "  note: device memory allows rotating over %d weight buffers only\n",
                 result.rotate);
  }
  const Clock::time_point t0 = Clock::now();
  const std::vector<double> acc = ReferenceProduct(data.p, data.a.values.data(),
                                                   data.b.values.data(), config.reference_threads);
  result.reference_seconds = Seconds(t0);
  std::fprintf(stderr, "  float64 reference: %.2f s\n", result.reference_seconds);

  const double tolerance = Tolerance(data.p.d.type, data.options.allow_tf32);
  // Check and capture every column first, then replay them in turn.
  struct Pending {
    size_t cell;
    Column column;
    std::unique_ptr<CapturedGraph> graph;
    std::vector<double> samples;
    // Streaming and resident (RunConfig::regimes), when timed.
    std::unique_ptr<CapturedGraph> regime_graph[2];
    std::vector<double> regime_samples[2];
  };
  std::vector<Pending> pending;
  for (Impl impl : bc.impls) {
    if (!config.impls.empty() &&
        std::find(config.impls.begin(), config.impls.end(), impl) == config.impls.end()) {
      continue;
    }
    CellResult cell;
    cell.impl = impl;
    cell.tolerance = tolerance;
    absl::StatusOr<Column> col = MakeColumn(impl, data, ctx);
    if (!col.ok()) {
      cell.status = col.status();
    } else {
      cell.plan = col->plan;
      cell.create_ms = col->create_ms;
      cell.status = Check(*col, impl, data, acc, ctx.stream(), cell);
      if (cell.status.ok() && !(cell.rel_err <= tolerance)) {
        cell.wrong = true;
        cell.status = absl::InternalError(absl::StrFormat(
            "WRONG RESULT: relative Frobenius error %.3g exceeds %.1g", cell.rel_err, tolerance));
      }
      if (cell.status.ok()) {
        auto graph = CapturedGraph::Capture(col->launch, ctx.stream(), config.timing);
        if (graph.ok()) {
          Pending p{result.cells.size(), *std::move(col), *std::move(graph), {}, {}, {}};
          if (result.streaming_copies > 0 && TimedInBothRegimes(impl)) {
            // Each graph keeps the B pointers it was captured with.
            const int rotations[2] = {result.streaming_copies, 1};
            for (int k = 0; k < 2 && cell.status.ok(); ++k) {
              data.rotation = rotations[k];
              auto g = CapturedGraph::Capture(p.column.launch, ctx.stream(), config.timing);
              if (g.ok()) {
                p.regime_graph[k] = *std::move(g);
              } else {
                cell.status = g.status();
              }
            }
            data.rotation = result.rotate;
          }
          if (cell.status.ok()) pending.push_back(std::move(p));
        } else {
          cell.status = graph.status();
        }
      }
    }
    result.cells.push_back(std::move(cell));
    std::string why;
    if (ContextBroken(&why)) {
      std::fprintf(stderr, "  the CUDA context is broken (%s); stopping\n", why.c_str());
      result.fatal = true;
      return result;
    }
  }
  for (int rep = 0; rep < config.timing.replays; ++rep) {
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[ColumnOrder(rep, i, pending.size())];
      CellResult& cell = result.cells[p.cell];
      if (!cell.status.ok()) continue;
      absl::StatusOr<double> us = p.graph->ReplayUs();
      if (us.ok()) {
        p.samples.push_back(*us);
      } else {
        cell.status = us.status();
      }
      for (int k = 0; k < 2 && cell.status.ok(); ++k) {
        if (p.regime_graph[k] == nullptr) continue;
        absl::StatusOr<double> r = p.regime_graph[k]->ReplayUs();
        if (r.ok()) {
          p.regime_samples[k].push_back(*r);
        } else {
          cell.status = r.status();
        }
      }
    }
  }
  for (Pending& p : pending) {
    CellResult& cell = result.cells[p.cell];
    if (!cell.status.ok()) continue;
    const Timing t = Summarize(std::move(p.samples));
    cell.us = t.median_us;
    cell.us_min = t.min_us;
    cell.us_max = t.max_us;
    if (p.regime_graph[0] != nullptr)
      cell.us_streaming = Summarize(std::move(p.regime_samples[0])).median_us;
    if (p.regime_graph[1] != nullptr)
      cell.us_resident = Summarize(std::move(p.regime_samples[1])).median_us;
  }
  pending.clear();  // graphs before the plans they launch
  for (const CellResult& cell : result.cells) {
    if (cell.status.ok()) {
      std::fprintf(stderr, "  %-12s %10.2f us  err %.2e  %s\n", ImplName(cell.impl), cell.us,
                   cell.rel_err, cell.plan.c_str());
      if (cell.us_streaming >= 0 || cell.us_resident >= 0) {
        std::fprintf(stderr, "  %-12s %10.2f us streaming (B x%d), %.2f us resident\n", "",
                     cell.us_streaming, result.streaming_copies, cell.us_resident);
      }
    } else {
      std::fprintf(stderr, "  %-12s %s: %s\n", ImplName(cell.impl),
                   cell.wrong ? "FAIL" : (IsNotApplicable(cell) ? "n/a" : "error"),
                   cell.status.ToString().c_str());
    }
  }
  std::string why;
  if (ContextBroken(&why)) {
    std::fprintf(stderr, "  the CUDA context is broken (%s); stopping\n", why.c_str());
    result.fatal = true;
  }
  return result;
}

}  // namespace jitgemm::bench
