#include "jitgemm/c_api.h"

#include <exception>
#include <new>
#include <string>

#include "absl/status/status.h"
#include "jitgemm/plan.h"
#include "jitgemm/problem.h"

struct jitgemm_plan_s {
  jitgemm::Plan plan;
  std::string description;
};

namespace {

thread_local std::string g_last_error;

jitgemm_status_t Fail(const absl::Status& s) {
  g_last_error = s.ToString();
  return static_cast<jitgemm_status_t>(s.code());
}

jitgemm::Operand ToOperand(const jitgemm_operand_t& o) {
  return {static_cast<jitgemm::DataType>(o.type), static_cast<jitgemm::Layout>(o.layout), o.ld,
          o.batch_stride};
}

jitgemm::GemmProblem ToProblem(const jitgemm_problem_t& c) {
  jitgemm::GemmProblem p;
  p.m = c.m;
  p.n = c.n;
  p.k = c.k;
  p.batch_count = c.batch_count;
  p.a = ToOperand(c.a);
  p.b = ToOperand(c.b);
  p.c = ToOperand(c.c);
  p.d = ToOperand(c.d);
  p.epilogue.alpha = c.alpha;
  p.epilogue.beta = c.beta;
  p.epilogue.bias = static_cast<jitgemm::BiasMode>(c.bias_mode);
  p.epilogue.bias_batch_stride = c.bias_batch_stride;
  p.epilogue.activation = static_cast<jitgemm::Activation>(c.activation);
  return p;
}

}  // namespace

extern "C" {

void jitgemm_problem_init(jitgemm_problem_t* problem, int64_t m, int64_t n, int64_t k,
                          int32_t type) {
  if (problem == nullptr) return;
  *problem = jitgemm_problem_t{};
  problem->m = m;
  problem->n = n;
  problem->k = k;
  problem->batch_count = 1;
  jitgemm_operand_t op{type, 0, 0, -1};
  problem->a = problem->b = problem->c = problem->d = op;
  problem->alpha = 1.0f;
}

jitgemm_status_t jitgemm_plan_create(const jitgemm_problem_t* problem, jitgemm_plan_t* plan) {
  if (plan == nullptr) return Fail(absl::InvalidArgumentError("plan: null output pointer"));
  *plan = nullptr;
  if (problem == nullptr) return Fail(absl::InvalidArgumentError("problem: null pointer"));
  try {
    auto created = jitgemm::Plan::Create(ToProblem(*problem));
    if (!created.ok()) return Fail(created.status());
    const auto& info = created->info();
    *plan = new jitgemm_plan_s{std::move(*created), info.backend + " " + info.kernel_name};
    return JITGEMM_OK;
  } catch (const std::bad_alloc&) {
    return Fail(absl::ResourceExhaustedError("out of host memory"));
  } catch (const std::exception& e) {
    return Fail(absl::InternalError(e.what()));
  }
}

jitgemm_status_t jitgemm_plan_run(jitgemm_plan_t plan, const void* a, const void* b, const void* c,
                                  void* d, const void* bias, void* stream) {
  if (plan == nullptr) return Fail(absl::InvalidArgumentError("plan: null"));
  absl::Status s = plan->plan.Run({a, b, c, d, bias}, static_cast<CUstream>(stream));
  if (!s.ok()) return Fail(s);
  return JITGEMM_OK;
}

const char* jitgemm_plan_describe(jitgemm_plan_t plan) {
  return plan == nullptr ? "" : plan->description.c_str();
}

void jitgemm_plan_destroy(jitgemm_plan_t plan) { delete plan; }

const char* jitgemm_last_error(void) { return g_last_error.c_str(); }

}  // extern "C"
