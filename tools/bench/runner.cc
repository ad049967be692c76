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
#include "tools/bench/case_data.h"
#include "tools/bench/columns.h"
#include "tools/bench/host_data.h"
#include "tools/bench/reference.h"

namespace jitgemm::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
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
