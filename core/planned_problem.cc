#include "core/planned_problem.h"

#include <utility>

namespace jitgemm {
namespace {

Layout Flip(Layout l) { return l == Layout::kRowMajor ? Layout::kColMajor : Layout::kRowMajor; }

Operand Transposed(Operand op) {
  op.layout = Flip(op.layout);
  return op;
}

bool Broadcasts(const GemmProblem& p) {
  return p.batch_count > 1 && (p.a.batch_stride == 0 || p.b.batch_stride == 0);
}

}  // namespace

GemmProblem TransposeProblem(const GemmProblem& p) {
  GemmProblem t = p;
  std::swap(t.m, t.n);
  t.a = Transposed(p.b);
  t.b = Transposed(p.a);
  t.c = Transposed(p.c);
  t.d = Transposed(p.d);
  if (p.epilogue.bias == BiasMode::kPerColumn) t.epilogue.bias = BiasMode::kPerRow;
  if (p.epilogue.bias == BiasMode::kPerRow) t.epilogue.bias = BiasMode::kPerColumn;
  return t;
}

PlannedProblem PlanProblem(const GemmProblem& p, const Options& options) {
  const bool transpose = p.d.layout == Layout::kColMajor && p.epilogue.gate == Gate::kNone &&
                         p.m >= kPlanMinSide && p.n >= kPlanMinSide && p.k >= kPlanMinK &&
                         !Broadcasts(p) && !options.constant_b;
  if (!transpose) return {p, false};
  return {TransposeProblem(p), true};
}

}  // namespace jitgemm
