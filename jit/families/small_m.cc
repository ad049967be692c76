// Host side of kernels_src/small_m/gemm_small_m.cuh: decode-time linear
// y = x W^T for M <= 64, bf16/fp16, B column-major (nn.Linear's row-major
// weight), and gated problems over [W_gate; W_up] (B of 2N columns). The
// weights stream from DRAM once; x stays on chip; K may be split across CTAs
// with the reduction inside the same kernel.
//
// Config fields, as this family reads them:
//   block_m   rows of x kept on chip: a multiple of 8 in [8, 64], >= M
//             (with runtime_m, the M bucket the kernel serves)
//   block_n   rows of W (columns of B) per CTA = 16 * R * warps_n, R = 16-row
//             tiles per warp
//   block_k   32 (the chunk of K one product step covers), or 64 * KS
//             (128, 256) for the wgmma path on sm_90a (IsWg, small_m_geometry.h)
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
// Candidate rules: small_m_candidates.cc; their measurements: docs/kernels.md.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "jit/families/families.h"
#include "jit/families/small_m_geometry.h"
#include "jit/family.h"
#include "jit/kernel_config.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit {

namespace small_m {
namespace {

class SmallMFamily final : public KernelFamily {
 public:
  Family id() const override { return Family::kSmallM; }
  const char* header() const override { return "jitgemm/small_m/gemm_small_m.cuh"; }
  const char* kernel_template() const override { return "jitgemm::small_m::GemmSmallM"; }

  absl::Status Supports(const GemmProblem& p, const KernelConfig& c,
                        const TargetInfo& target) const override {
    if (c.family != Family::kSmallM) return absl::InvalidArgumentError("not a small_m config");
    if (p.epilogue.gate != Gate::kNone && c.cluster_k) {
      return absl::UnimplementedError(absl::StrCat(
          "small_m: gated problems reduce split-K through the workspace, not in a cluster: ",
          c.ToString()));
    }
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

  // Heuristics: small_m_candidates.cc.
  std::vector<KernelConfig> Candidates(const GemmProblem& p, const TargetInfo& target,
                                       TuningPolicy policy) const override {
    if (p.epilogue.gate == Gate::kNone) return small_m::Candidates(*this, p, target, policy);
    // A gated problem streams the 2N rows of W that its [gate | up] product
    // would: the rules see that product, and keep what the gated kernel runs.
    GemmProblem product = p;
    product.n = BColumns(p);
    product.epilogue.gate = Gate::kNone;
    std::vector<KernelConfig> out;
    for (const KernelConfig& c : small_m::Candidates(*this, product, target, policy)) {
      if (Supports(p, c, target).ok()) out.push_back(c);
    }
    return out;
  }

  bool Sm90aOnly(const KernelConfig& c) const override {
    return IsWg(c) || c.cluster_k || c.x_copy > 0;
  }

  std::string ExtraSpecFields(const GemmProblem& p, const KernelConfig& c) const override {
    // Loads of two chunks back to back, dependents released after the last
    // weight load (the kernel's defaults, written out for the cache key).
    // Weights that stream past L2 ask for 256-byte L2 fills, smaller ones for
    // 128-byte fills; early weights release dependents at entry so the next
    // grid's weights stream while this one computes (docs/kernels.md).
    const int hint = WeightBytes(p) > kHintBytes ? 256 : 128;
    std::string extra =
        absl::StrCat("  static constexpr int kSmallMGroup = ", c.stages % 2 == 0 ? 2 : 1,
                     ";\n  static constexpr int kSmallMTrigger = ", c.early_b ? 0 : 1, ";\n",
                     "  static constexpr int kSmallMLoadHint = ", hint, ";\n");
    if (c.early_b) absl::StrAppend(&extra, "  static constexpr bool kSmallMEarlyB = true;\n");
    if (p.epilogue.gate != Gate::kNone)
      absl::StrAppend(&extra, "  static constexpr int kGate = 1;\n");
    if (c.x_copy > 0) {
      absl::StrAppend(&extra, "  static constexpr int kSmallMXCluster = ", c.x_copy, ";\n");
    }
    if (c.cluster_k) absl::StrAppend(&extra, "  static constexpr bool kSmallMClusterK = true;\n");
    // Bulk x: two accumulator sets (the two k16 halves of a chunk), and with
    // early weights x in two pieces along K so products start on the first
    // while the second is in flight. Weights after the wait keep x in one
    // piece: the L2 prefetch before the wait assumes each warp's chunks are
    // contiguous (docs/kernels.md).
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
}  // namespace small_m

const KernelFamily& SmallMFamilyInstance() {
  static const small_m::SmallMFamily kFamily;
  return kFamily;
}

}  // namespace jitgemm::jit
