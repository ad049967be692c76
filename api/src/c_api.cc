#include "jitgemm/c_api.h"

#include <exception>
#include <fstream>
#include <new>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "api/src/manifest.h"
#include "api/src/options_check.h"
#include "api/src/record.h"
#include "cache/disk_cache.h"
#include "jitgemm/options.h"
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
  p.epilogue.gate = static_cast<jitgemm::Gate>(c.gate);
  return p;
}

jitgemm_operand_t FromOperand(const jitgemm::Operand& o) {
  return {static_cast<int32_t>(o.type), static_cast<int32_t>(o.layout), o.ld, o.batch_stride};
}

jitgemm_problem_t FromProblem(const jitgemm::GemmProblem& p) {
  jitgemm_problem_t c{};
  c.m = p.m;
  c.n = p.n;
  c.k = p.k;
  c.batch_count = p.batch_count;
  c.a = FromOperand(p.a);
  c.b = FromOperand(p.b);
  c.c = FromOperand(p.c);
  c.d = FromOperand(p.d);
  c.alpha = p.epilogue.alpha;
  c.beta = p.epilogue.beta;
  c.bias_mode = static_cast<int32_t>(p.epilogue.bias);
  c.bias_batch_stride = p.epilogue.bias_batch_stride;
  c.activation = static_cast<int32_t>(p.epilogue.activation);
  c.gate = static_cast<int32_t>(p.epilogue.gate);
  return c;
}

// Enum values outside their range are left for ValidateOptions to reject.
jitgemm::Options ToOptions(const jitgemm_options_t* c) {
  jitgemm::Options o = jitgemm::Options::FromEnvironment();
  if (c == nullptr) return o;
  o.backend = static_cast<jitgemm::BackendPolicy>(c->backend);
  o.tuning = static_cast<jitgemm::TuningPolicy>(c->tuning);
  o.jit_enabled = c->jit_enabled != 0;
  o.allow_tf32 = c->allow_tf32 != 0;
  o.pdl = c->pdl != 0;
  o.constant_b = c->constant_b != 0;
  o.pointer_alignment = c->pointer_alignment;
  o.win_margin = c->win_margin;
  o.regime = static_cast<jitgemm::TimingRegime>(c->regime);
  return o;
}

// Exceptions must not cross the C boundary.
template <typename F>
jitgemm_status_t Guarded(F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(absl::ResourceExhaustedError("out of host memory"));
  } catch (const std::exception& e) {
    return Fail(absl::InternalError(e.what()));
  }
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

void jitgemm_options_init(jitgemm_options_t* options) {
  if (options == nullptr) return;
  const jitgemm::Options o = jitgemm::Options::FromEnvironment();
  *options = jitgemm_options_t{static_cast<int32_t>(o.backend),
                               static_cast<int32_t>(o.tuning),
                               o.jit_enabled,
                               o.allow_tf32,
                               o.pdl,
                               o.constant_b,
                               o.pointer_alignment,
                               static_cast<int32_t>(o.regime),
                               o.win_margin};
}

jitgemm_status_t jitgemm_plan_create(const jitgemm_problem_t* problem, jitgemm_plan_t* plan) {
  return jitgemm_plan_create_with_options(problem, nullptr, plan);
}

jitgemm_status_t jitgemm_plan_create_with_options(const jitgemm_problem_t* problem,
                                                  const jitgemm_options_t* options,
                                                  jitgemm_plan_t* plan) {
  if (plan == nullptr) return Fail(absl::InvalidArgumentError("plan: null output pointer"));
  *plan = nullptr;
  if (problem == nullptr) return Fail(absl::InvalidArgumentError("problem: null pointer"));
  return Guarded([&] {
    auto created = jitgemm::Plan::Create(ToProblem(*problem), ToOptions(options));
    if (!created.ok()) return Fail(created.status());
    const auto& info = created->info();
    *plan = new jitgemm_plan_s{std::move(*created), info.backend + " " + info.kernel_name};
    return JITGEMM_OK;
  });
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

jitgemm_status_t jitgemm_cache_stats(jitgemm_cache_stats_t* stats) {
  if (stats == nullptr) return Fail(absl::InvalidArgumentError("stats: null pointer"));
  return Guarded([&] {
    static thread_local std::string root;
    std::shared_ptr<jitgemm::cache::DiskCache> cache = jitgemm::cache::DiskCache::Default();
    const jitgemm::cache::CacheCounters c = cache->counters();
    *stats = jitgemm_cache_stats_t{};
    stats->hits = c.hits;
    stats->misses = c.misses;
    stats->shared = c.shared;
    stats->compiles = c.compiles;
    stats->stores = c.stores;
    stats->corrupt = c.corrupt;
    stats->evictions = c.evictions;
    stats->lock_waits = c.lock_waits;
    stats->store_failures = c.store_failures;
    if (cache->mode() != jitgemm::cache::CacheMode::kOff) {
      if (absl::StatusOr<jitgemm::cache::CacheUsage> usage = cache->Usage(); usage.ok()) {
        stats->entries = usage->entries;
        stats->bytes = usage->bytes;
      }
    }
    stats->mode = jitgemm::cache::CacheModeName(cache->mode());
    root = cache->root();
    stats->root = root.c_str();
    return JITGEMM_OK;
  });
}

jitgemm_status_t jitgemm_manifest_add(const char* path, const jitgemm_problem_t* problem,
                                      const jitgemm_options_t* options) {
  if (path == nullptr) return Fail(absl::InvalidArgumentError("path: null pointer"));
  if (problem == nullptr) return Fail(absl::InvalidArgumentError("problem: null pointer"));
  return Guarded([&] {
    const jitgemm::GemmProblem p = ToProblem(*problem);
    const jitgemm::Options o = ToOptions(options);
    absl::Status s = jitgemm::ValidateProblem(p);
    if (s.ok()) s = jitgemm::ValidateOptions(o);
    if (s.ok()) s = jitgemm::AppendToManifest(path, p, o);
    return s.ok() ? JITGEMM_OK : Fail(s);
  });
}

jitgemm_status_t jitgemm_manifest_read(const char* path, jitgemm_problem_t* problems,
                                       int64_t capacity, int64_t* count) {
  if (path == nullptr) return Fail(absl::InvalidArgumentError("path: null pointer"));
  if (count == nullptr) return Fail(absl::InvalidArgumentError("count: null pointer"));
  if (capacity > 0 && problems == nullptr) {
    return Fail(absl::InvalidArgumentError("problems: null pointer with a capacity"));
  }
  *count = 0;
  return Guarded([&] {
    std::ifstream in(path);
    if (!in) return Fail(absl::NotFoundError(absl::StrCat("cannot read ", path)));
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<jitgemm::Manifest> manifest = jitgemm::ParseManifest(text.str());
    if (!manifest.ok()) {
      return Fail(absl::Status(manifest.status().code(),
                               absl::StrCat(path, ": ", manifest.status().message())));
    }
    const int64_t n = static_cast<int64_t>(manifest->problems.size());
    for (int64_t i = 0; i < n && i < capacity; ++i) {
      problems[i] = FromProblem(manifest->problems[i].problem);
    }
    *count = n;
    return JITGEMM_OK;
  });
}

const char* jitgemm_last_error(void) { return g_last_error.c_str(); }

}  // extern "C"
