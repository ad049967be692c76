// Host side of kernels_src/small_m/gemm_small_m.cuh: decode-time linear
// y = x W^T for M <= 64, bf16/fp16, B column-major (nn.Linear's row-major
// weight). The weights stream from DRAM once; x stays on chip; K may be split
// across CTAs with the reduction inside the same kernel.
//
// Config fields, as this family reads them:
//   block_m   rows of x kept on chip: a multiple of 8 in [8, 64], >= M
//             (with runtime_m, the M bucket the kernel serves)
//   block_n   rows of W (columns of B) per CTA = 16 * R * warps_n, R = 16-row
//             tiles per warp
//   block_k   32 (the chunk of K one product step covers), or 64 * KS
//             (128, 256) for the wgmma path on sm_90a (see IsWg below)
//   warps_n   warps side by side along N
//   warps_m   warps side by side along K inside the CTA (each a K sub-range,
//             reduced in shared memory)
//   stages    K chunks of W in flight per warp (register ring, 1..16)
//   split_k   CTAs along K; > 1 reduces through the zeroed workspace, or with
//             cluster_k (sm_90) in distributed shared memory: the split_k CTAs
//             of an n tile form one thread-block cluster, no workspace
//   pdl       programmatic dependent launch (L2 prefetch before the wait)
//   runtime_m M is args.m (any M <= block_m) instead of a constant
//
// First measurements on an H100 (bf16, K = 4096, graph of 100 launches over
// 100 rotated weight buffers, median of 5 replays, cuBLAS in the same process;
// issue 5; the figures at each rule below and in bench/results/ are later):
// one CTA per SM with split_k = 1 and warps_n = 1 wins wherever N / 16 >= the
// SM count: split-K added about 1 us of tail, and warps_n > 1 multiplies the x
// traffic of the cp.async ring. N = 2048: 7.35-7.50 us at M = 1..4 (cuBLAS
// 9.9), 8.1 at M = 8, 8.7 at M = 16 (two row tiles per warp, no PDL);
// N = 4096: 12.3-13.5 us (cuBLAS 15.3-15.7); N = 12288 with 256-byte L2
// fills: 35.5-35.9 us (cuBLAS 36.2-36.7). A plain 16.8 MB streaming read
// kernel takes 6.7-7.0 us per launch in the same harness (an nvcc test bench
// outside the repository).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "jit/families/families.h"
#include "jit/family.h"
#include "jit/kernel_config.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit {

const KernelFamily& SmallMFamilyInstance();

namespace {

constexpr int kChunk = 32;        // K per product step (config.block_k)
constexpr int kMaxThreads = 512;  // 8-16 warps; more only costs registers
constexpr int kMaxGridYZ = 65535;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int RoundUp8(int64_t m) { return static_cast<int>(CeilDiv(std::max<int64_t>(m, 1), 8) * 8); }

// Mirrors jitgemm::small_m::Traits<S> (kernels_src/small_m/gemm_small_m.cuh).
struct Geometry {
  int mp = 8, mg = 1, warps_n = 1, warps_k = 1, warps = 1, bn = 16, r = 1, stages = 1;
  int split = 1;
  int64_t ck = 1, cc = 1, cw = 1, cc_pad = 1, tiles = 1;
  bool x_ring = true;
  bool x_bulk = false;  // the kernel's kXMulti, less the pointer alignment it alone knows
  int64_t x_bytes = 0, t_bytes = 0, smem = 0, counter_bytes = 0, workspace = 0;
};

Geometry Derive(const GemmProblem& p, const KernelConfig& c) {
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
  g.tiles = CeilDiv(p.n, g.bn);
  // The ring needs A row-major with rows (and batches) 16 bytes apart.
  const int64_t esize = 2;
  const bool batched_a = p.batch_count > 1 && p.a.batch_stride > 0;
  g.x_ring = p.a.layout == Layout::kRowMajor && (p.a.ld * esize) % 16 == 0 &&
             (!batched_a || (p.a.batch_stride * esize) % 16 == 0);
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
int64_t WeightBytes(const GemmProblem& p) {
  const bool batched_b = p.batch_count > 1 && p.b.batch_stride > 0;
  return p.n * p.k * 2 * (batched_b ? p.batch_count : 1);
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
bool FitsRegisters(const Geometry& g) {
  const int ring_and_acc = 8 * g.stages * g.r + 4 * g.r * g.mg;
  // 512 threads leave 128 registers a thread. With 64 rows of x (8 groups)
  // and one 16-row tile a warp, 4 stages spilled (255 registers, sm_90a, the
  // outer loop unrolled); two tiles a warp with 4 stages did not.
  if (g.mg == 8 && g.r == 1 && g.stages >= 4 && g.warps <= 8) return false;
  return g.r <= 4 && ring_and_acc <= (g.warps > 8 ? 80 : 144);
}

// Two-tile CTAs in pairs along K (cluster_k) fill the SMs in one wave: N in
// 32-row tiles, two CTAs each, between 7/8 of the SMs and all of them.
bool ClusterKFits(const GemmProblem& p, int wn, int r, int split, int sms) {
  const int64_t ctas = CeilDiv(CeilDiv(p.n, 16), 2) * 2;
  return wn == 1 && r == 1 && split == 1 && p.batch_count == 1 && ctas <= sms &&
         ctas >= sms - sms / 8;
}

KernelConfig Make(int bm, int r, int wn, int wk, int stages, int split, bool runtime_m) {
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
bool IsWg(const KernelConfig& c) { return c.block_k > kChunk; }
int64_t WgSmem(const KernelConfig& c) {
  return int64_t{c.stages} * (c.block_k / 64) * (64 * 128 + c.block_n * 128) + 1024;
}
KernelConfig MakeWg(int block_n, int stages, int ks) {
  KernelConfig c = Make(64, 1, 1, 4, stages, 1, /*runtime_m=*/true);
  c.block_n = block_n;
  c.block_k = 64 * ks;
  return c;
}

class SmallMFamily final : public KernelFamily {
 public:
  Family id() const override { return Family::kSmallM; }
  const char* header() const override { return "jitgemm/small_m/gemm_small_m.cuh"; }
  const char* kernel_template() const override { return "jitgemm::small_m::GemmSmallM"; }

  absl::Status Supports(const GemmProblem& p, const KernelConfig& c,
                        const TargetInfo& target) const override {
    if (c.family != Family::kSmallM) return absl::InvalidArgumentError("not a small_m config");
    if (target.sm < 80) {
      return absl::UnimplementedError("small_m needs bf16/fp16 mma.sync (sm_80 or later)");
    }
    if (p.a.type != p.b.type || (p.a.type != DataType::kBF16 && p.a.type != DataType::kF16)) {
      return absl::UnimplementedError("small_m: A and B must both be bf16 or both fp16");
    }
    if (p.b.layout != Layout::kColMajor) {
      return absl::UnimplementedError(
          "small_m: B must be column-major (the (N, K) row-major weight of nn.Linear)");
    }
    if (p.m < 1 || p.m > 64) return absl::UnimplementedError("small_m serves 1 <= M <= 64");
    if (c.block_m % 8 != 0 || c.block_m < 8 || c.block_m > 64 || c.block_m < p.m) {
      return absl::InvalidArgumentError(
          absl::StrCat("small_m: block_m must be a multiple of 8 in [M, 64]: ", c.ToString()));
    }
    if (c.cluster_k) {
      if (target.sm < 90) return absl::UnimplementedError("small_m: clusters need sm_90");
      if (IsWg(c) || c.split_k < 2 || c.split_k > 8 || c.x_copy > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "small_m cluster_k: split_k of 2..8 CTAs, no x multicast, the register-ring path: ",
            c.ToString()));
      }
    }
    if (IsWg(c)) {
      if (target.sm != 90) {
        return absl::UnimplementedError("small_m: the wgmma path needs sm_90a");
      }
      const bool shape_ok = (c.block_k == 64 || c.block_k == 128 || c.block_k == 256) &&
                            c.block_m == 64 && (c.block_n == 16 || c.block_n == 32) &&
                            c.warps_m == 4 && c.warps_n == 1 && c.stages >= 3 && c.stages <= 8 &&
                            c.split_k == 1 && c.x_copy == 0 && !c.early_b;
      if (!shape_ok) {
        return absl::InvalidArgumentError(absl::StrCat(
            "small_m wgmma: block 64 x {16, 32} x {64, 128, 256}, 4 x 1 warps, 3..8 stages, no "
            "split: ",
            c.ToString()));
      }
      // 16-byte rows (cp.async units); the same keeps the register-ring
      // fallback's x in a small ring.
      const bool batched_a = p.batch_count > 1 && p.a.batch_stride > 0;
      const bool batched_b = p.batch_count > 1 && p.b.batch_stride > 0;
      if (p.a.layout != Layout::kRowMajor || (p.a.ld * 2) % 16 != 0 || (p.b.ld * 2) % 16 != 0 ||
          (batched_a && (p.a.batch_stride * 2) % 16 != 0) ||
          (batched_b && (p.b.batch_stride * 2) % 16 != 0)) {
        return absl::UnimplementedError(
            "small_m wgmma: A row-major, A and B rows (and batches) 16 bytes apart");
      }
      if (std::max(WgSmem(c), Derive(p, c).smem) > target.shared_bytes_per_block_optin) {
        return absl::UnimplementedError(absl::StrCat("small_m wgmma: needs ", WgSmem(c),
                                                     " bytes of shared memory: ", c.ToString()));
      }
    } else if (c.block_k != kChunk) {
      return absl::InvalidArgumentError(
          absl::StrCat("small_m: block_k must be 32 (or 64, 128, 256 for wgmma): ", c.ToString()));
    }
    const int threads = 32 * c.warps_m * c.warps_n;
    if (c.warps_m < 1 || c.warps_n < 1 || threads > kMaxThreads || c.block_n < 16 ||
        c.block_n % (16 * c.warps_n) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("small_m: block_n = 16 * R * warps_n, <= 512 threads: ", c.ToString()));
    }
    if (c.x_copy != 0 && c.x_copy != 1 && c.x_copy != 2 && c.x_copy != 4 && c.x_copy != 8) {
      return absl::InvalidArgumentError(
          absl::StrCat("small_m: x_copy is 0, 1, 2, 4 or 8: ", c.ToString()));
    }
    if (c.x_copy > 0 && target.sm < 90) {
      return absl::UnimplementedError("small_m: bulk copies and clusters need sm_90");
    }
    if (c.stages < 1 || c.stages > 16 || c.split_k < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("small_m: stages in 1..16, split_k >= 1: ", c.ToString()));
    }
    const Geometry g = Derive(p, c);
    // The wgmma path keeps no ring (the ring fallback, taken only for
    // pointers under 16-byte alignment, may spill there: still correct).
    if (!IsWg(c) && !FitsRegisters(g)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "small_m: ring and accumulators exceed the register budget: ", c.ToString()));
    }
    if (c.split_k > g.ck || c.split_k > kMaxGridYZ || p.batch_count > kMaxGridYZ ||
        g.tiles > (int64_t{1} << 31) - 1) {
      return absl::UnimplementedError("small_m: grid out of range for this split or batch");
    }
    if (g.smem > target.shared_bytes_per_block_optin) {
      return absl::UnimplementedError(absl::StrCat(
          "small_m: needs ", g.smem, " bytes of shared memory per CTA: ", c.ToString()));
    }
    return absl::OkStatus();
  }

  LaunchShape Shape(const GemmProblem& p, const KernelConfig& c,
                    const TargetInfo& target) const override {
    const Geometry g = Derive(p, c);
    LaunchShape s;
    s.grid[0] = static_cast<uint32_t>(g.tiles);
    s.grid[1] = static_cast<uint32_t>(g.split);
    s.grid[2] = static_cast<uint32_t>(p.batch_count);
    s.block[0] = static_cast<uint32_t>(32 * g.warps);
    // Under PDL, one CTA per SM where the weight slice is only partly
    // prefetched: a next grid whose CTAs can co-reside with this one lands
    // unevenly on the SMs (grids of 128 CTAs on 132 SMs) and ran 2.1 us slower
    // per call at 4096 x 4096 (H100, measured); padding shared memory past half
    // an SM keeps every grid at one per SM. Where the whole slice is prefetched
    // before the wait (weights <= 16 MB), co-residence wins instead: 2048 x
    // 4096 ran 7.35-7.50 us unpadded vs 7.83-7.92 padded at M = 1..4 (H100).
    int64_t smem = g.smem;
    if (c.pdl && WeightBytes(p) > kWholePrefetchBytes) {
      const int64_t pad = target.shared_bytes_per_block_optin / 2 + 1024;
      if (pad <= target.shared_bytes_per_block_optin) smem = std::max(smem, pad);
    }
    // Early bulk x with block_m = 8 asks for the shared memory a 16-row block
    // would: 2048 x 4096 bf16 under constant_b ran 6.75 us at M = 8 and 6.08
    // at M = 1 with 136 KB requested, 7.30 / 6.55 with the 68 KB it uses, and
    // block_m = 16 (136 KB, twice the products) 6.96 / 6.17 (H100, kernel
    // harness; jitgemm-bench then measured 6.86 / 6.10). One CTA per SM either
    // way (registers); a larger request (176 KB) was slower again, so this
    // pins the measured size rather than a maximum.
    if (g.x_bulk && g.mp == 8 && c.early_b) {
      smem = std::max<int64_t>(smem, int64_t{g.warps_k} * 16 * (g.cw * 64 + 64));
    }
    // Bulk x with the weights after the wait asks for 100 KB instead: M = 8
    // ran 7.37-7.39 us with it, 7.58-7.63 with the 68 KB it uses and
    // 7.90-7.93 with 136 KB (2048 x 4096 bf16, H100, kernel harness).
    if (g.x_bulk && !c.early_b && !c.cluster_k &&
        kLateBulkSmem <= target.shared_bytes_per_block_optin) {
      smem = std::max(smem, kLateBulkSmem);
    }
    // Early kernels split along K in a cluster ask for 120 KB: 2048 x 4096 bf16
    // M = 16 (x in two pieces, one-way reduction) ran 6.60-6.65 us with it,
    // 6.63-6.67 with 110 / 114 / 124 / 128 KB, 6.69-6.78 with 136 KB, 6.70
    // with 160 and 6.82 with 96 (H100, kernel harness; one CTA per SM by
    // registers in every case). The kernel uses 72 KB; before the one-way
    // reduction 72 KB ran 8.00-8.05 against 7.55-7.61 with 136. Without early
    // weights a larger request was slower (8.80 against 7.92).
    if (c.cluster_k && c.early_b && kClusterKEarlySmem <= target.shared_bytes_per_block_optin) {
      smem = std::max(smem, kClusterKEarlySmem);
    }
    if (IsWg(c)) smem = std::max(smem, WgSmem(c));
    s.shared_bytes = static_cast<uint32_t>(smem);
    s.workspace_bytes = static_cast<size_t>(g.workspace);
    s.pdl = c.pdl;
    // Clusters only where the kernel multicasts; the grid is a multiple then.
    s.cluster_x = g.x_bulk && c.x_copy > 1 ? static_cast<uint32_t>(c.x_copy) : 1;
    s.cluster_y = c.cluster_k ? static_cast<uint32_t>(g.split) : 1;
    return s;
  }

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
  std::vector<KernelConfig> Candidates(const GemmProblem& p, const TargetInfo& target,
                                       TuningPolicy policy) const override {
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
        if (Supports(p, c, target).ok()) {
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
      if (r == 1) add(Make(bm_bucket, r, wn, wk, 16, split, true));  // every load in flight
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
      while (e.stages > 1 && !Supports(p, e, target).ok()) e.stages /= 2;
      std::vector<KernelConfig> twins;
      if (Supports(p, e, target).ok()) {
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
          if (Supports(p, c, target).ok() && Derive(p, c).x_bulk) bulks.push_back(c);
        }
        // Bulk x without clusters first at every M: with x in two pieces it
        // ran 6.08 us against 6.74 for the pairs at M = 8 (jitgemm tuner,
        // 2048 x 4096, H100; the pairs led before at M > 4).
        if (bulks.size() == 2 && p.m > 8 && p.m <= 16 && e.warps_n == 1) {
          wide.stages = static_cast<int>(std::min<int64_t>(16, Derive(p, wide).cw));
          if (Supports(p, wide, target).ok() && Derive(p, wide).x_bulk) {
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
        while (k2.stages > 1 && !Supports(p, k2, target).ok()) k2.stages /= 2;
        if (Supports(p, k2, target).ok() && Derive(p, k2).x_bulk) {
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
      if (p.m > 4 && p.m <= 8 && Supports(p, late, target).ok() && Derive(p, late).x_bulk &&
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
        if (Supports(p, c, target).ok()) wg.push_back(c);
      }
      out.insert(out.begin() + at, wg.begin(), wg.end());
    }
    if (policy == TuningPolicy::kFast && out.size() > 8) out.resize(8);
    return out;
  }

  std::string ExtraSpecFields(const GemmProblem& p, const KernelConfig& c) const override {
    // Loads of two chunks back to back, dependents released after the last
    // weight load (the kernel's defaults, written out for the cache key).
    // Weights that stream past L2 ask for 256-byte L2 fills: 12288 x 4096
    // ran 35.5 us vs 38.3 without (H100, M = 1; cuBLAS 36.2). Smaller ones
    // ask for 128-byte fills, faster in every kernel shape measured (H100,
    // bf16, kernel harness, us): 2048 x 4096 early bulk x M = 1 6.10 -> 5.74,
    // pairs M = 8 6.74 -> 6.60, L2-prefetch kernel M = 8 8.27 -> 7.72, two
    // tiles a warp M = 16 / 32 / 64 8.44 / 9.13 / 14.2 -> 7.75 / 8.51 / 12.9;
    // 4096 x 4096 M = 1 / 8 / 16 12.44 / 12.85 / 13.4 -> 11.87 / 12.25 / 12.57.
    // Early weights release dependents at entry: the next grid's weights then
    // stream while this grid computes (measured above).
    const int hint = WeightBytes(p) > kHintBytes ? 256 : 128;
    std::string extra =
        absl::StrCat("  static constexpr int kSmallMGroup = ", c.stages % 2 == 0 ? 2 : 1,
                     ";\n  static constexpr int kSmallMTrigger = ", c.early_b ? 0 : 1, ";\n",
                     "  static constexpr int kSmallMLoadHint = ", hint, ";\n");
    if (c.early_b) absl::StrAppend(&extra, "  static constexpr bool kSmallMEarlyB = true;\n");
    if (c.x_copy > 0) {
      absl::StrAppend(&extra, "  static constexpr int kSmallMXCluster = ", c.x_copy, ";\n");
    }
    if (c.cluster_k) absl::StrAppend(&extra, "  static constexpr bool kSmallMClusterK = true;\n");
    // Early weights with bulk x: x in two pieces along K (each warp's chunks
    // split between them) so products start on the first while the second is
    // in flight, and separate accumulators for the two k16 halves of a chunk
    // (once the weights are on chip, the mma chain after x is on the critical
    // path). 2048 x 4096 bf16, H100, kernel harness, us: M = 16 in K pairs
    // 7.55 -> 7.45 (accumulators) -> 7.02-7.07 (pieces); M = 8 pairs 6.71 ->
    // 6.55 -> 6.46-6.48; M = 1 5.87 -> 5.59. Four or eight pieces were slower
    // (7.6-7.7 at M = 16), as were runs of one chunk a warp (7.2).
    // Weights after the wait keep x in one piece: the L2 prefetch of the
    // slice before the wait assumes each warp's chunks are contiguous.
    const Geometry g = Derive(p, c);
    if (c.x_copy > 0 && g.x_bulk) {
      absl::StrAppend(&extra, "  static constexpr int kSmallMAccSets = 2;\n");
      if (c.early_b && g.cw % 2 == 0) {
        absl::StrAppend(&extra, "  static constexpr int kSmallMXParts = 2;\n",
                        "  static constexpr int kSmallMXInterleave = ", g.cw / 2, ";\n");
      }
    }
    return extra;
  }
};

}  // namespace

const KernelFamily& SmallMFamilyInstance() {
  static const SmallMFamily kFamily;
  return kFamily;
}

}  // namespace jitgemm::jit
