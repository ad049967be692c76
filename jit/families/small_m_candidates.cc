// The small-M family's candidate rules: which configs it proposes for a
// problem and target, best guess first.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "jit/families/small_m_geometry.h"

namespace jitgemm::jit::small_m {

// Heuristics (H100 measurements, see the file comment):
//  * one CTA per SM, 256 threads: R * warps_n 16-row tiles of W per CTA with
//    R * warps_n = ceil(N / 16 / SMs), warps_n = 1 while R <= 3;
//  * the remaining warps split the CTA's K range (warps_m = 8 / warps_n);
//  * split_k > 1 only when that leaves fewer than half the SMs busy
//    (small N), up to filling the SMs;
//  * stages 8 for one row tile per warp, 4 for two or three;
//  * M in 9..64 where one row tile per CTA fills the SMs: two tiles per
//    warp on half as many CTAs (x traffic halved);
//  * run-time M in buckets of 8 / 16 / 32 / 64 rows: as fast as a kernel per
//    M (within 0.15 us at M = 1..4, faster at 8 and 16 in the same run) and
//    one compile serves every M of a bucket; kFast adds the exact-M kernel;
//  * M > 16 loses to cuBLAS at N >= 2048, K = 4096 (0.71-0.97x) except with
//    two tiles per warp at M <= 32 (1.15x at N = 2048): no other heuristic
//    config there, only timed candidates (kFast, kExhaustive).
std::vector<KernelConfig> Candidates(const KernelFamily& family, const GemmProblem& p,
                                     const TargetInfo& target, TuningPolicy policy) {
  if (p.m > 32 && policy == TuningPolicy::kHeuristic && target.sm != 90) return {};
  const int sms = std::max(1, target.multiprocessors);
  const int64_t rows16 = CeilDiv(p.n, 16);
  const int64_t per_cta = std::max<int64_t>(1, CeilDiv(rows16, sms));
  int wn = 1, r = static_cast<int>(std::min<int64_t>(per_cta, 3));
  if (per_cta > 3) {
    wn = static_cast<int>(std::min<int64_t>(4, CeilDiv(per_cta, 3)));
    r = static_cast<int>(std::min<int64_t>(4, CeilDiv(per_cta, wn)));
  }
  const int wk = std::max(1, 8 / wn);
  const int64_t ctas = CeilDiv(rows16, int64_t{r} * wn) * p.batch_count;
  const int64_t ck = CeilDiv(p.k, kChunk);
  int split = 1;
  if (ctas * 2 < sms) {
    // Each warp keeps at least 4 chunks of its own.
    split = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(sms / ctas, ck / (4 * wk))));
  }
  auto stages_for = [](int rr) { return rr == 1 ? 8 : 4; };
  const int bm_exact = RoundUp8(p.m);
  const int bm_bucket = p.m <= 8 ? 8 : p.m <= 16 ? 16 : p.m <= 32 ? 32 : 64;
  // M in 9..64 with one 16-row tile per CTA: every CTA reads at least as
  // many bytes of x as of W. Two tiles per warp on half the SMs (no split-K)
  // halve the x traffic. 2048 x 4096 (H100, jitgemm-bench, exhaustive
  // tuning): M = 16 8.25 us (7.89 with M exact) against 10.4 with one tile;
  // M = 32 9.72 against 11.2 (cuBLAS 11.2); M = 64 13.8 against 14.5
  // (cuBLASLt 9.6 serves it). With PDL off, M = 16 ran 9.04.
  const int r_base = r;  // before the M = 9..64 change below
  bool x_bound = false;
  if (bm_bucket >= 16 && wn == 1 && r == 1 && split == 1 && p.batch_count == 1 &&
      CeilDiv(rows16, 2) * 2 >= sms - sms / 8) {
    x_bound = true;
    r = 2;
  }
  if (p.m > 16 && !x_bound && policy == TuningPolicy::kHeuristic) return {};

  std::vector<KernelConfig> out;
  auto add = [&](KernelConfig c) {
    // Until the config fits this target: a staged x slice shrinks with more
    // split-K, the x ring and the registers with fewer stages.
    for (int guard = 0; guard < 12; ++guard) {
      if (family.Supports(p, c, target).ok()) {
        if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
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
  };
  if (x_bound) {
    add(Make(bm_bucket, r, wn, wk, stages_for(r), split, /*runtime_m=*/true));
    if (policy != TuningPolicy::kHeuristic) {
      add(Make(bm_bucket, 1, wn, wk, stages_for(1), split, true));  // the one-tile config
    }
  } else {
    add(Make(bm_bucket, r, wn, wk, stages_for(r), split, /*runtime_m=*/true));
  }
  if (policy != TuningPolicy::kHeuristic) {
    add(Make(bm_exact, r, wn, wk, stages_for(r), split, /*runtime_m=*/false));
    if (r == 1) add(Make(bm_bucket, r, wn, wk, 16, split, true));            // every load in flight
    if (wk == 8 && r == 1) add(Make(bm_bucket, r, wn, 16, 8, split, true));  // 512 threads
    add(Make(bm_bucket, r, wn, wk, stages_for(r), std::max(2, split * 2), true));
    if (policy == TuningPolicy::kExhaustive) {
      for (int rr : {1, 2, 3}) {
        for (int sk : {1, 2, 4, 8}) {
          for (int st : {4, 8}) add(Make(bm_bucket, rr, 1, 8, st, sk, true));
        }
      }
    }
  }
  // Early-weight kernels, used only under PDL with Options::constant_b
  // (ProposeConfigs drops them otherwise): as many of a warp's chunks as the
  // register budget allows are loaded before the wait. Where that is the
  // warp's whole slice, x arrives by bulk copies, multicast to CTA pairs in
  // a second variant (block_m 8 padded as Shape says, else 16). Measured
  // (H100, 2048 x 4096 bf16, 100 weights, us per call, M = 1 / 2 / 4 / 8 /
  // 16), block_m 16: bulk x 6.22 / 6.47 / 6.79 / 7.30 / 8.87, pairs 6.62 /
  // 6.69 / 6.81 / 6.96 / 8.16; block_m 8 padded: bulk 6.08 at M = 1, pairs
  // 6.75 at M = 8; x by cp.async 6.42 / 7.31 / 7.37 / 8.15 / -, the L2-prefetch
  // kernel 7.38 / 7.47 / 7.62 / 8.00 / 8.76. 4096 x 4096 (slice too big for
  // the ring): 11.83 vs 12.31 at M = 1, slower from M = 8.
  if (target.sm >= 90) {
    KernelConfig e = Make(bm_bucket, r_base, wn, wk, stages_for(r_base), split, true);
    e.early_b = true;
    e.stages =
        static_cast<int>(std::min<int64_t>(16, std::max<int64_t>(Derive(p, e).cw, e.stages)));
    while (e.stages > 1 && !family.Supports(p, e, target).ok()) e.stages /= 2;
    std::vector<KernelConfig> twins;
    if (family.Supports(p, e, target).ok()) {
      KernelConfig bulk = e;
      bulk.x_copy = 1;
      KernelConfig pairs = bulk;
      pairs.x_copy = 2;
      // M = 9..16: 512 threads (16 warps along K, half the ring each) ran
      // 8.10 us vs 8.31 with 256 (pairs, 2048 x 4096, H100, harness).
      KernelConfig wide = pairs;
      wide.warps_m = e.warps_m * 2;
      std::vector<KernelConfig> bulks;
      for (const KernelConfig& c : {bulk, pairs}) {
        if (family.Supports(p, c, target).ok() && Derive(p, c).x_bulk) bulks.push_back(c);
      }
      // Bulk x without clusters first at every M: with x in two pieces it
      // ran 6.08 us against 6.74 for the pairs at M = 8 (jitgemm tuner,
      // 2048 x 4096, H100; the pairs led before at M > 4).
      if (bulks.size() == 2 && p.m > 8 && p.m <= 16 && e.warps_n == 1) {
        wide.stages = static_cast<int>(std::min<int64_t>(16, Derive(p, wide).cw));
        if (family.Supports(p, wide, target).ok() && Derive(p, wide).x_bulk) {
          bulks.insert(bulks.begin(), wide);
        }
      }
      twins = bulks;
      twins.push_back(e);
    }
    // M = 9..16 where 32-row tiles in CTA pairs along K fill the SMs once,
    // in place of the early kernel with x by cp.async (10.2 us at M = 16):
    // each CTA needs only half of x, and the pair reduces in distributed
    // shared memory. 2048 x 4096 bf16 M = 16, us, first version: kernel harness
    // (nvcc) 7.55-7.61 on an H100 against 7.86-7.91 for the pairs kernel above and
    // 7.77-7.93 for two tiles a warp; 6.81 against 7.46 / 7.03 on an H200.
    // With M at run time and x in one piece it timed 7.86-7.90 in
    // jitgemm-bench; with exact M and x in two pieces (ExtraSpecFields) it
    // leads (below). Clusters of 4 along K do not fit: at most 30 are
    // resident, so 32 run in two waves (10.7 us).
    if (p.m > 8 && p.m <= 16 && ClusterKFits(p, wn, r_base, split, sms)) {
      // Exact M: 7.05 us against 7.25 with M at run time (harness, H100).
      KernelConfig k2 = Make(bm_exact, 2, 1, wk, 8, 2, /*runtime_m=*/false);
      k2.early_b = true;
      k2.x_copy = 1;
      k2.cluster_k = true;
      k2.stages = static_cast<int>(std::min<int64_t>(16, Derive(p, k2).cw));
      while (k2.stages > 1 && !family.Supports(p, k2, target).ok()) k2.stages /= 2;
      if (family.Supports(p, k2, target).ok() && Derive(p, k2).x_bulk) {
        if (!twins.empty() && !twins.back().x_copy) twins.pop_back();
        twins.insert(twins.begin(), k2);
      }
    }
    // Without bulk x the early kernel wins only at M <= 2 (above). At M =
    // 9..16 the K pairs lead (x in two pieces, exact M, one-way reduction:
    // 6.91-6.95 us in the tuner, 6.77-6.80 in jitgemm-bench, against
    // 7.39-7.53 for two tiles a warp without early weights and 7.20-7.26
    // for bulk x alone; H100, 2048 x 4096); other early kernels lead up to
    // M = 8.
    const bool lead = !twins.empty() && ((twins.front().x_copy > 0 && p.m <= 8) ||
                                         twins.front().cluster_k || p.m <= 2);
    auto at = lead ? out.begin() : out.begin() + std::min<size_t>(1, out.size());
    for (const KernelConfig& t : twins) {
      if (std::find(out.begin(), out.end(), t) != out.end()) continue;
      at = out.insert(at, t) + 1;
    }
    // Without constant_b, bulk x (no clusters) with the weights loaded after
    // the wait at M = 5..8: 7.59 us against 8.05 for x by cp.async, and
    // slower at M = 1..4 (7.27-7.48 against 6.94-7.08); 2048 x 4096 bf16,
    // exact M, H100, kernel harness. After the early kernels and the first
    // other one, so it is second once ProposeConfigs drops the early ones.
    KernelConfig late = e;
    late.early_b = false;
    late.x_copy = 1;
    if (p.m > 4 && p.m <= 8 && family.Supports(p, late, target).ok() && Derive(p, late).x_bulk &&
        std::find(out.begin(), out.end(), late) == out.end()) {
      auto first_late =
          std::find_if(out.begin(), out.end(), [](const KernelConfig& c) { return !c.early_b; });
      out.insert(first_late == out.end() ? out.end() : std::max(at, first_late + 1), late);
    }
  }
  // The wgmma path for M > 16 on Hopper (bf16 2048 x 4096, H100, kernel
  // harness, us): M = 64 8.60 (block_k 128, 8 stages) / 8.97 (256, 5) against
  // 13.2 for two register-ring tiles a warp and cuBLAS 10.2; M = 32 8.67 /
  // 8.89 against 8.5. First where M > 32, timed after the first otherwise.
  // Block_n 32 halves the CTAs for wider N: 4096 x 4096 M = 64 14.1-14.7
  // against 17.0-17.7 with 16 (cuBLAS 14.7).
  if (target.sm == 90 && (p.m > 32 || (p.m > 16 && policy != TuningPolicy::kHeuristic))) {
    const size_t at = p.m > 32 ? 0 : std::min<size_t>(1, out.size());
    std::vector<KernelConfig> wg;
    for (const KernelConfig& c : {MakeWg(16, 8, 2), MakeWg(16, 5, 4), MakeWg(32, 6, 2)}) {
      if (family.Supports(p, c, target).ok()) wg.push_back(c);
    }
    out.insert(out.begin() + at, wg.begin(), wg.end());
  }
  if (policy == TuningPolicy::kFast && out.size() > 8) out.resize(8);
  return out;
}

}  // namespace jitgemm::jit::small_m
