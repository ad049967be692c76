#include "tools/bench/columns.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "jitgemm/plan.h"
#include "tools/bench/glu_kernel.h"
#include "tools/bench/lt_baseline.h"

namespace jitgemm::bench {
namespace {

using Clock = std::chrono::steady_clock;

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
      ctx.workspace(), ctx.workspace_bytes(), BaselinePointerAlignment(data.options));
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

}  // namespace

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
        LtBaseline::Create(ctx.lt(), problem, epi, ctx.workspace(), ctx.workspace_bytes(),
                           BaselinePointerAlignment(data.options));
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
      col.create_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
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

}  // namespace jitgemm::bench
