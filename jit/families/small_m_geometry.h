// The small-M family's host-side mirror of its kernel's geometry
// (kernels_src/small_m/traits.cuh, Traits<S>), the sizes its rules
// depend on, config constructors, and its candidate rules. Internal to
// jit/families/small_m*.cc.
//
// Thread safety: pure functions.
#ifndef JITGEMM_JIT_FAMILIES_SMALL_M_GEOMETRY_H_
#define JITGEMM_JIT_FAMILIES_SMALL_M_GEOMETRY_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "jit/family.h"
#include "jit/kernel_config.h"
#include "jitgemm/options.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit::small_m {

constexpr int kChunk = 32;        // K per product step (config.block_k)
constexpr int kMaxThreads = 512;  // 8-16 warps; more only costs registers
constexpr int kMaxGridYZ = 65535;

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int RoundUp8(int64_t m) { return static_cast<int>(CeilDiv(std::max<int64_t>(m, 1), 8) * 8); }

// Mirrors jitgemm::small_m::Traits<S> (kernels_src/small_m/traits.cuh).
struct Geometry {
  int mp = 8, mg = 1, warps_n = 1, warps_k = 1, warps = 1, bn = 16, r = 1, stages = 1;
  int split = 1;
  int64_t ck = 1, cc = 1, cw = 1, cc_pad = 1, tiles = 1;
  bool x_ring = true;
  bool x_bulk = false;  // the kernel's kXMulti, less the pointer alignment it alone knows
  int64_t x_bytes = 0, t_bytes = 0, smem = 0, counter_bytes = 0, workspace = 0;
};

inline Geometry Derive(const GemmProblem& p, const KernelConfig& c) {
  Geometry g;
  g.mp = c.block_m;
  g.mg = c.block_m / 8;
  g.warps_n = std::max(1, c.warps_n);
  g.warps_k = std::max(1, c.warps_m);
  g.warps = g.warps_n * g.warps_k;
  g.bn = c.block_n;
  g.r = std::max(1, c.block_n / (16 * g.warps_n));
  g.stages = c.stages;
  g.split = std::max(1, c.split_k);
  g.ck = CeilDiv(p.k, kChunk);
  g.cc = CeilDiv(g.ck, g.split);
  g.cw = CeilDiv(g.cc, g.warps_k);
  g.cc_pad = g.cw * g.warps_k;
  // A gated tile's block_n rows of W are the gate and up rows of block_n / 2
  // outputs (kernels_src/small_m/traits.cuh).
  g.tiles = CeilDiv(p.n, p.epilogue.gate != Gate::kNone ? g.bn / 2 : g.bn);
  // The ring needs A's rows 16 bytes apart, or a column-major A of 8-element
  // columns with 8 rows kept (Traits::kXRingCol), and batches 16 bytes apart.
  const int64_t esize = 2;
  const bool batched_a = p.batch_count > 1 && p.a.batch_stride > 0;
  const bool rows_ok =
      p.a.layout == Layout::kRowMajor ? (p.a.ld * esize) % 16 == 0 : p.a.ld == 8 && c.block_m == 8;
  g.x_ring = rows_ok && (!batched_a || (p.a.batch_stride * esize) % 16 == 0);
  g.x_bytes = g.x_ring ? int64_t{g.warps} * g.stages * g.mg * 512 : g.cc_pad * g.mg * 512;
  const bool k_even = p.k % kChunk == 0 && g.ck % g.split == 0 && g.cc % g.warps_k == 0;
  g.x_bulk = c.x_copy >= 1 && c.x_copy <= 8 && g.cw <= g.stages &&
             (g.split == 1 || (c.cluster_k && c.x_copy == 1)) && k_even &&
             p.a.layout == Layout::kRowMajor && (p.a.ld * esize) % 16 == 0 && p.batch_count == 1 &&
             g.tiles % std::max(1, c.x_copy) == 0;
  if (g.x_bulk) {
    // [warp K range][row][chunk] with a 64-byte pad a row; never below what
    // the ring fallback needs (a pointer under 16-byte alignment).
    g.x_bytes = std::max(g.x_bytes, int64_t{g.warps_k} * g.mp * (g.cw * 64 + 64));
  }
  g.t_bytes = int64_t{g.warps_k} * g.mp * (g.bn + 4) * 4;
  g.smem = std::max(g.x_bytes, g.t_bytes);
  // cluster_k: rank 0 receives the other ranks' tiles behind both.
  if (c.cluster_k) g.smem += int64_t{g.split - 1} * g.mp * g.bn * 4;
  g.counter_bytes = CeilDiv(g.tiles * p.batch_count * 4, 256) * 256;
  g.workspace = g.split > 1 && !c.cluster_k
                    ? g.counter_bytes + g.tiles * p.batch_count * g.split * int64_t{g.mp} * g.bn * 4
                    : 0;
  return g;
}

// Bytes of B the kernel streams (mirrors Traits<S>::kWeightBytes).
inline int64_t WeightBytes(const GemmProblem& p) {
  const bool batched_b = p.batch_count > 1 && p.b.batch_stride > 0;
  return BColumns(p) * p.k * 2 * (batched_b ? p.batch_count : 1);
}
// At or below this the kernel prefetches its whole weight slice into L2 before
// griddepcontrol.wait (Traits<S>::kAutoPrefetch).
constexpr int64_t kWholePrefetchBytes = int64_t{16} << 20;
// Above this the weights stream past L2: loads ask for 256-byte L2 fills;
// at or below it, 128-byte fills.
constexpr int64_t kHintBytes = int64_t{40} << 20;
// Shared memory an early cluster_k kernel and a bulk-x kernel with the
// weights after the wait ask for (Shape says why).
constexpr int64_t kClusterKEarlySmem = int64_t{120} << 10;
constexpr int64_t kLateBulkSmem = int64_t{100} << 10;

// Registers a warp's ring and accumulators take; the compiled kernels stay
// spill-free below this budget (ptxas, sm_80 and sm_90a).
inline bool FitsRegisters(const Geometry& g) {
  const int ring_and_acc = 8 * g.stages * g.r + 4 * g.r * g.mg;
  // 512 threads leave 128 registers a thread. With 64 rows of x (8 groups)
  // and one 16-row tile a warp, 4 stages spilled (255 registers, sm_90a, the
  // outer loop unrolled); two tiles a warp with 4 stages did not.
  if (g.mg == 8 && g.r == 1 && g.stages >= 4 && g.warps <= 8) return false;
  return g.r <= 4 && ring_and_acc <= (g.warps > 8 ? 80 : 144);
}

// Two-tile CTAs in pairs along K (cluster_k) fill the SMs in one wave: N in
// 32-row tiles, two CTAs each, between 7/8 of the SMs and all of them.
inline bool ClusterKFits(const GemmProblem& p, int wn, int r, int split, int sms) {
  const int64_t ctas = CeilDiv(CeilDiv(p.n, 16), 2) * 2;
  return wn == 1 && r == 1 && split == 1 && p.batch_count == 1 && ctas <= sms &&
         ctas >= sms - sms / 8;
}

inline KernelConfig Make(int bm, int r, int wn, int wk, int stages, int split, bool runtime_m) {
  KernelConfig c;
  c.family = Family::kSmallM;
  c.block_m = bm;
  c.block_n = 16 * r * wn;
  c.block_k = kChunk;
  c.warps_m = wk;
  c.warps_n = wn;
  c.stages = stages;
  c.split_k = split;
  c.runtime_m = runtime_m;
  return c;
}

// The wgmma path of the kernel (block_k = 64 * KS > 32, sm_90a): one
// warpgroup, a 64-row x tile and a block_n-row W tile per stage, both in
// shared memory; stages x KS 64-wide K atoms. When the pointers are less than
// 16-byte aligned the kernel takes the register-ring path with the same
// launch shape, so the shape covers both.
inline bool IsWg(const KernelConfig& c) { return c.block_k > kChunk; }
inline int64_t WgSmem(const KernelConfig& c) {
  return int64_t{c.stages} * (c.block_k / 64) * (64 * 128 + c.block_n * 128) + 1024;
}
inline KernelConfig MakeWg(int block_n, int stages, int ks) {
  KernelConfig c = Make(64, 1, 1, 4, stages, 1, /*runtime_m=*/true);
  c.block_n = block_n;
  c.block_k = 64 * ks;
  return c;
}

// The configs the family proposes for a problem, best guess first: the rules
// of small_m_candidates.cc in order. `skip_rule` (tests only) leaves one out.
std::vector<KernelConfig> Candidates(const KernelFamily& family, const GemmProblem& p,
                                     const TargetInfo& target, TuningPolicy policy,
                                     const char* skip_rule = nullptr);

// The names of those rules, in order.
std::vector<const char*> CandidateRuleNames();

}  // namespace jitgemm::jit::small_m

#endif  // JITGEMM_JIT_FAMILIES_SMALL_M_GEOMETRY_H_
