// The small-M family's candidate rules: an ordered table of named rules that
// build the configs it proposes for a problem and target, best guess first.
// Each rule has a test (tests/jit/small_m_rules_test.cc) that runs the table
// with and without it; docs/kernels.md has the measurements behind each.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "jit/families/small_m_geometry.h"

namespace jitgemm::jit::small_m {
namespace {

// What the rules share while they build one problem's list.
struct Proposal {
  const KernelFamily& family;
  const GemmProblem& p;
  const TargetInfo& target;
  TuningPolicy policy;

  // The base config: one CTA per SM, 256 threads (see "one-cta-per-sm").
  int sms = 1;
  int64_t rows16 = 0;  // 16-row tiles of W
  int64_t ck = 0;      // K chunks
  int wn = 1, r = 1, r_base = 1, wk = 8, split = 1;
  int bm_exact = 8, bm_bucket = 8;
  bool x_bound = false;

  // The early-weight kernels (sm_90) and where they went.
  KernelConfig early = {};
  std::vector<KernelConfig> twins = {};
  size_t after_early = 0;

  std::vector<KernelConfig> out = {};
  bool done = false;  // a rule decided the list is final

  static int StagesFor(int rr) { return rr == 1 ? 8 : 4; }
  bool Supported(const KernelConfig& c) const { return family.Supports(p, c, target).ok(); }
  bool Has(const KernelConfig& c) const {
    return std::find(out.begin(), out.end(), c) != out.end();
  }

  // Adds `c`, changed until it fits this target: a staged x slice shrinks
  // with more split-K, the x ring and the registers with fewer stages.
  void Add(KernelConfig c) {
    for (int guard = 0; guard < 12; ++guard) {
      if (Supported(c)) {
        if (!Has(c)) out.push_back(c);
        return;
      }
      const Geometry g = Derive(p, c);
      const bool slice_too_big = !g.x_ring && g.x_bytes > target.shared_bytes_per_block_optin;
      if (slice_too_big && c.split_k * 2 <= ck) {
        c.split_k *= 2;
      } else if (c.stages > 2) {
        c.stages /= 2;
      } else if (c.split_k * 2 <= ck) {
        c.split_k *= 2;
      } else {
        return;
      }
    }
  }
};

// Below Hopper, M > 32 is left to the tensor-core family and cuBLAS unless timed.
void NothingAboveM32BelowHopper(Proposal& s) {
  if (s.p.m > 32 && s.policy == TuningPolicy::kHeuristic && s.target.sm != 90) s.done = true;
}

// One CTA per SM, 256 threads: R * warps_n 16-row tiles of W per CTA with
// R * warps_n = ceil(N / 16 / SMs), warps_n = 1 while R <= 3; the other warps
// split the CTA's K range (warps_m = 8 / warps_n); split_k > 1 only when that
// leaves fewer than half the SMs busy, up to filling them.
void OneCtaPerSm(Proposal& s) {
  const GemmProblem& p = s.p;
  s.sms = std::max(1, s.target.multiprocessors);
  s.rows16 = CeilDiv(p.n, 16);
  const int64_t per_cta = std::max<int64_t>(1, CeilDiv(s.rows16, s.sms));
  s.r = static_cast<int>(std::min<int64_t>(per_cta, 3));
  if (per_cta > 3) {
    s.wn = static_cast<int>(std::min<int64_t>(4, CeilDiv(per_cta, 3)));
    s.r = static_cast<int>(std::min<int64_t>(4, CeilDiv(per_cta, s.wn)));
  }
  s.wk = std::max(1, 8 / s.wn);
  const int64_t ctas = CeilDiv(s.rows16, int64_t{s.r} * s.wn) * p.batch_count;
  s.ck = CeilDiv(p.k, kChunk);
  if (ctas * 2 < s.sms) {
    // Each warp keeps at least 4 chunks of its own.
    s.split =
        static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(s.sms / ctas, s.ck / (4 * s.wk))));
  }
  s.bm_exact = RoundUp8(p.m);
  s.bm_bucket = p.m <= 8 ? 8 : p.m <= 16 ? 16 : p.m <= 32 ? 32 : 64;
  s.r_base = s.r;
}

// M in 9..64 where one 16-row tile per CTA fills the SMs: two tiles per warp
// on half as many CTAs halve the x traffic.
void TwoTilesPerWarpWhereXBinds(Proposal& s) {
  if (s.bm_bucket >= 16 && s.wn == 1 && s.r == 1 && s.split == 1 && s.p.batch_count == 1 &&
      CeilDiv(s.rows16, 2) * 2 >= s.sms - s.sms / 8) {
    s.x_bound = true;
    s.r = 2;
  }
}

// M > 16 loses to cuBLAS except with two tiles per warp: only timed there.
void AboveM16OnlyWhereXBinds(Proposal& s) {
  if (s.p.m > 16 && !s.x_bound && s.policy == TuningPolicy::kHeuristic) s.done = true;
}

// The heuristic's choice: M at run time in buckets of 8 / 16 / 32 / 64 rows.
void RuntimeMBucket(Proposal& s) {
  s.Add(Make(s.bm_bucket, s.r, s.wn, s.wk, Proposal::StagesFor(s.r), s.split, true));
  if (s.x_bound && s.policy != TuningPolicy::kHeuristic) {
    s.Add(Make(s.bm_bucket, 1, s.wn, s.wk, Proposal::StagesFor(1), s.split, true));  // one tile
  }
}

// Timed policies add exact M, every load in flight, 512 threads, more
// split-K, and (exhaustive) a grid of tiles, split-K and stages.
void TimedVariants(Proposal& s) {
  if (s.policy == TuningPolicy::kHeuristic) return;
  const int bm = s.bm_bucket, r = s.r, wn = s.wn, wk = s.wk, split = s.split;
  s.Add(Make(s.bm_exact, r, wn, wk, Proposal::StagesFor(r), split, /*runtime_m=*/false));
  if (r == 1) s.Add(Make(bm, r, wn, wk, 16, split, true));            // every load in flight
  if (wk == 8 && r == 1) s.Add(Make(bm, r, wn, 16, 8, split, true));  // 512 threads
  s.Add(Make(bm, r, wn, wk, Proposal::StagesFor(r), std::max(2, split * 2), true));
  if (s.policy == TuningPolicy::kExhaustive) {
    for (int rr : {1, 2, 3}) {
      for (int sk : {1, 2, 4, 8}) {
        for (int st : {4, 8}) s.Add(Make(bm, rr, 1, 8, st, sk, true));
      }
    }
  }
}

// sm_90, under PDL with Options::constant_b only (ProposeConfigs drops them
// otherwise): as many of a warp's chunks as the registers allow are loaded
// before the wait; where that is the whole slice, x arrives by bulk copies,
// alone or multicast to CTA pairs, with 512 threads at M = 9..16.
void EarlyWeights(Proposal& s) {
  if (s.target.sm < 90) return;
  KernelConfig e =
      Make(s.bm_bucket, s.r_base, s.wn, s.wk, Proposal::StagesFor(s.r_base), s.split, true);
  e.early_b = true;
  e.stages =
      static_cast<int>(std::min<int64_t>(16, std::max<int64_t>(Derive(s.p, e).cw, e.stages)));
  while (e.stages > 1 && !s.Supported(e)) e.stages /= 2;
  s.early = e;
  if (!s.Supported(e)) return;
  KernelConfig bulk = e;
  bulk.x_copy = 1;
  KernelConfig pairs = bulk;
  pairs.x_copy = 2;
  KernelConfig wide = pairs;
  wide.warps_m = e.warps_m * 2;
  std::vector<KernelConfig> bulks;
  for (const KernelConfig& c : {bulk, pairs}) {
    if (s.Supported(c) && Derive(s.p, c).x_bulk) bulks.push_back(c);
  }
  if (bulks.size() == 2 && s.p.m > 8 && s.p.m <= 16 && e.warps_n == 1) {
    wide.stages = static_cast<int>(std::min<int64_t>(16, Derive(s.p, wide).cw));
    if (s.Supported(wide) && Derive(s.p, wide).x_bulk) bulks.insert(bulks.begin(), wide);
  }
  s.twins = bulks;
  s.twins.push_back(e);
}

// sm_90, M = 9..16 where 32-row tiles in CTA pairs along K fill the SMs once:
// each CTA needs half of x and the pair reduces in distributed shared memory.
// Replaces the early kernel with x by cp.async.
void ClusterKPairs(Proposal& s) {
  if (s.target.sm < 90 || s.p.m <= 8 || s.p.m > 16 ||
      !ClusterKFits(s.p, s.wn, s.r_base, s.split, s.sms)) {
    return;
  }
  KernelConfig k2 = Make(s.bm_exact, 2, 1, s.wk, 8, 2, /*runtime_m=*/false);
  k2.early_b = true;
  k2.x_copy = 1;
  k2.cluster_k = true;
  k2.stages = static_cast<int>(std::min<int64_t>(16, Derive(s.p, k2).cw));
  while (k2.stages > 1 && !s.Supported(k2)) k2.stages /= 2;
  if (s.Supported(k2) && Derive(s.p, k2).x_bulk) {
    if (!s.twins.empty() && !s.twins.back().x_copy) s.twins.pop_back();
    s.twins.insert(s.twins.begin(), k2);
  }
}

// sm_90: the early kernels lead where they win (bulk x up to M = 8, the K
// pairs, anything at M <= 2), else follow the first other config.
void EarlyKernelsLeadWhereTheyWin(Proposal& s) {
  if (s.target.sm < 90) return;
  const std::vector<KernelConfig>& twins = s.twins;
  const bool lead = !twins.empty() && ((twins.front().x_copy > 0 && s.p.m <= 8) ||
                                       twins.front().cluster_k || s.p.m <= 2);
  size_t at = lead ? 0 : std::min<size_t>(1, s.out.size());
  for (const KernelConfig& t : twins) {
    if (s.Has(t)) continue;
    s.out.insert(s.out.begin() + at, t);
    ++at;
  }
  s.after_early = at;
}

// sm_90, M = 5..8 without constant_b: bulk x with the weights loaded after
// the wait, second once ProposeConfigs drops the early kernels.
void LateWeightBulkX(Proposal& s) {
  if (s.target.sm < 90) return;
  KernelConfig late = s.early;
  late.early_b = false;
  late.x_copy = 1;
  if (s.p.m > 4 && s.p.m <= 8 && s.Supported(late) && Derive(s.p, late).x_bulk && !s.Has(late)) {
    auto first_late =
        std::find_if(s.out.begin(), s.out.end(), [](const KernelConfig& c) { return !c.early_b; });
    const size_t index =
        first_late == s.out.end()
            ? s.out.size()
            : std::max(s.after_early, static_cast<size_t>(first_late - s.out.begin()) + 1);
    s.out.insert(s.out.begin() + index, late);
  }
}

// sm_90a, M > 16: the wgmma path, first where M > 32, else timed after the
// first config; block_n 32 halves the CTAs for wide N.
void WgmmaAboveM16(Proposal& s) {
  if (s.target.sm != 90 || !(s.p.m > 32 || (s.p.m > 16 && s.policy != TuningPolicy::kHeuristic))) {
    return;
  }
  const size_t at = s.p.m > 32 ? 0 : std::min<size_t>(1, s.out.size());
  std::vector<KernelConfig> wg;
  for (const KernelConfig& c : {MakeWg(16, 8, 2), MakeWg(16, 5, 4), MakeWg(32, 6, 2)}) {
    if (s.Supported(c)) wg.push_back(c);
  }
  s.out.insert(s.out.begin() + at, wg.begin(), wg.end());
}

// kFast times at most 8.
void FastTimesEight(Proposal& s) {
  if (s.policy == TuningPolicy::kFast && s.out.size() > 8) s.out.resize(8);
}

struct Rule {
  const char* name;
  void (*apply)(Proposal&);
};

// In order: each rule sees what the rules before it decided.
constexpr Rule kRules[] = {
    {"nothing-above-m32-below-hopper", NothingAboveM32BelowHopper},
    {"one-cta-per-sm", OneCtaPerSm},
    {"two-tiles-per-warp-where-x-binds", TwoTilesPerWarpWhereXBinds},
    {"above-m16-only-where-x-binds", AboveM16OnlyWhereXBinds},
    {"runtime-m-bucket", RuntimeMBucket},
    {"timed-variants", TimedVariants},
    {"early-weights", EarlyWeights},
    {"cluster-k-pairs", ClusterKPairs},
    {"early-kernels-lead-where-they-win", EarlyKernelsLeadWhereTheyWin},
    {"late-weight-bulk-x", LateWeightBulkX},
    {"wgmma-above-m16", WgmmaAboveM16},
    {"fast-times-eight", FastTimesEight},
};

}  // namespace

std::vector<const char*> CandidateRuleNames() {
  std::vector<const char*> names;
  for (const Rule& rule : kRules) names.push_back(rule.name);
  return names;
}

std::vector<KernelConfig> Candidates(const KernelFamily& family, const GemmProblem& p,
                                     const TargetInfo& target, TuningPolicy policy,
                                     const char* skip_rule) {
  Proposal s{family, p, target, policy};
  for (const Rule& rule : kRules) {
    if (skip_rule != nullptr && std::strcmp(rule.name, skip_rule) == 0) continue;
    rule.apply(s);
    if (s.done) return {};
  }
  return s.out;
}

}  // namespace jitgemm::jit::small_m
