// Host side of kernels_src/sm90/gemm_tma_wgmma.cuh: TMA + wgmma GEMM for
// fp16 / bf16 operands on sm_90a, warp-specialised and persistent, with
// clusters of two CTAs along M sharing the B tile by multicast.
//
// Config fields: block_m x block_n tile, block_k 64, warps_m = consumer
// warpgroups (1 or 2), stages = shared-memory ring depth, cluster_m = CTAs per
// cluster along M, split_k = work items per tile along K, ping_pong = the two
// consumer warpgroups take alternate whole tiles (no split-K), split_units =
// only the last units are split (those of a last, partial wave), early_b = the
// first ring slices' B tiles are loaded before the wait for the previous grid
// (set by ProposeConfigs where the caller promises constant_b). What TMA
// cannot address (rows of A or B not 16-byte aligned) is refused and left to
// the other families.
#include "jit/families/sm90.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "jit/families/ranking.h"
#include "jit/family.h"
#include "jit/kernel_config.h"
#include "jit/specializer.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit {

const KernelFamily& Sm90FamilyInstance();

namespace {

constexpr int kBlockK = 64;
constexpr int kGroupM = 8;
// Two 64 x 64 16-bit staging blocks per consumer warpgroup for TMA stores.
constexpr int kStagingPerConsumer = 2 * 64 * 64 * 2;
// Problems of at most this many rows leave kRoomForNext bytes of the SM's
// shared memory to the next kernel (see Candidates).
constexpr int64_t kSmallM = 64;
constexpr int kRoomForNext = 32 * 1024;
// fp32 D is staged for TMA stores only with more tiles than an H100 has SMs
// (see Sm90TmaStore).
constexpr int64_t kFp32StagedMinTiles = 132;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

KernelConfig Make(int bm, int bn, int consumers, int stages, int cluster) {
  KernelConfig c;
  c.family = Family::kSm90;
  c.block_m = bm;
  c.block_n = bn;
  c.block_k = kBlockK;
  c.warps_m = consumers;
  c.warps_n = 1;
  c.stages = stages;
  c.cluster_m = cluster;
  return c;
}

bool Gated(const GemmProblem& p) { return p.epilogue.gate != Gate::kNone; }

bool Transcendental(Activation a) {
  return a == Activation::kSilu || a == Activation::kGeluTanh || a == Activation::kGeluErf;
}

// Columns of D one tile covers: a gated tile computes gate and up halves.
int OutColumns(const GemmProblem& p, const KernelConfig& c) {
  return Gated(p) ? c.block_n / 2 : c.block_n;
}

int64_t Units(const GemmProblem& p, const KernelConfig& c) {
  return CeilDiv(CeilDiv(p.m, c.block_m), c.cluster_m) * CeilDiv(p.n, OutColumns(p, c)) *
         p.batch_count;
}

// Units whose k loop is split (the last ones), or all of them.
int64_t SplitUnits(const GemmProblem& p, const KernelConfig& c) {
  if (c.split_k == 1) return Units(p, c);
  return c.split_units > 0 ? c.split_units : Units(p, c);
}

// Relative wgmma throughput of a tile shape: wider tiles read less shared
// memory per multiply-add (H100: 4096^3 and 8192^3 for the widest, the
// exhaustive S2 timings of bench/results/2026-11-26-h100-s2-exhaustive.log
// for the others).
double TileRate(const KernelConfig& c) {
  const int area = c.block_m * c.block_n;
  double rate = area >= 128 * 256   ? 1.0
                : area >= 128 * 192 ? 0.95
                : area >= 128 * 128 ? 0.9
                : area >= 64 * 128  ? 0.72
                                    : 0.53;
  if (c.cluster_m > 1) rate *= 1.06;
  return rate;
}

// Estimated microseconds: whole waves of persistent CTAs over the units, each
// unit's k loop at ~5.6 TFLOP/s per SM for the best tile, a fixed start. A
// cluster's multicast keeps its CTAs in step, which only a long k loop
// repays: at 1024^3 single CTAs ran 1.1-1.2 us faster.
double Cost(const GemmProblem& p, const KernelConfig& c, const TargetInfo& t) {
  const int64_t ctas = std::max<int64_t>(1, t.multiprocessors / c.cluster_m);
  const int64_t split_units = SplitUnits(p, c);
  // Waves of whole units, then waves of split ones.
  const int64_t whole_waves = c.split_k > 1 ? CeilDiv(Units(p, c) - split_units, ctas) : 0;
  const int64_t split_waves = CeilDiv(split_units * c.split_k, ctas);
  const double k_tiles = static_cast<double>(CeilDiv(p.k, kBlockK));
  const double split_k_tiles = static_cast<double>(CeilDiv(CeilDiv(p.k, kBlockK), c.split_k));
  const double slice_us = 2.0 * c.block_m * c.block_n * kBlockK / (5.6e6 * TileRate(c));
  // A split of every tile in clusters that its M tiles fill pays no cluster
  // start: of 18 such twins timed on the H100, 10 ran 0.45-1.3 us faster than
  // single CTAs, 3 level and 5 up to 0.9 us slower, while pairs whose second
  // tile lay past M lost 2.2-5 us (docs/kernels.md, "Cluster start").
  const bool multicast_split = c.split_k > 1 && c.split_units == 0 && !c.cluster_k &&
                               CeilDiv(p.m, c.block_m) % c.cluster_m == 0;
  double us = 2.5 + (c.cluster_m > 1 && !multicast_split ? 1.5 : 0.0) +
              static_cast<double>(whole_waves) * k_tiles * slice_us +
              static_cast<double>(split_waves) * split_k_tiles * slice_us +
              0.2 * CeilDiv(p.k, kBlockK) / c.split_k / std::max(1, c.stages);
  if (c.cluster_k) {
    // Partial tiles pushed into the other CTA's shared memory.
    us += 1.0;
  } else if (c.split_k > 1) {
    // Partial tiles written and read back through L2, then the last split's epilogue.
    const double bytes =
        static_cast<double>(split_units) * c.cluster_m * c.split_k * c.block_m * c.block_n * 4 * 2;
    us += 1.5 + bytes / 3.0e6;
  }
  return us;
}

bool RowsAligned16(const Operand& op, int64_t rows, int64_t cols, int64_t batch) {
  return OperandAlignment(op, rows, cols, batch, 16) >= 16;
}

class Sm90Family final : public KernelFamily {
 public:
  Family id() const override { return Family::kSm90; }
  const char* header() const override { return "jitgemm/sm90/gemm_tma_wgmma.cuh"; }
  const char* kernel_template() const override { return "jitgemm::sm90::GemmTmaWgmma"; }

  absl::Status Supports(const GemmProblem& p, const KernelConfig& c,
                        const TargetInfo& target) const override {
    if (c.family != Family::kSm90) return absl::InvalidArgumentError("not an sm90 config");
    if (target.sm != 90) {
      return absl::UnimplementedError(
          absl::StrCat("sm90 kernels need sm_90a (wgmma), target is sm_", target.sm));
    }
    if (p.a.type != p.b.type || (p.a.type != DataType::kF16 && p.a.type != DataType::kBF16)) {
      return absl::UnimplementedError("sm90 kernels need fp16 or bf16 A and B of one type");
    }
    if (c.runtime_m || c.x_copy != 0) {
      return absl::InvalidArgumentError("sm90 kernels take exact M and no bulk x");
    }
    const int64_t k_tiles = CeilDiv(p.k, kBlockK);
    if (c.split_k < 1 || c.split_k > 16 ||
        CeilDiv(k_tiles, c.split_k) * (c.split_k - 1) >= k_tiles) {
      return absl::InvalidArgumentError(
          absl::StrCat("sm90 split_k ", c.split_k,
                       " must be 1..16 and leave every split a k-tile (", k_tiles, " k-tiles)"));
    }
    if (c.split_units < 0 ||
        (c.split_units > 0 && (c.split_k < 2 || c.split_units > Units(p, c)))) {
      return absl::InvalidArgumentError(absl::StrCat("sm90 split_units ", c.split_units,
                                                     " must be 0 or 1..", Units(p, c),
                                                     " units with split_k > 1"));
    }
    if (!RowsAligned16(p.a, p.m, p.k, p.batch_count) ||
        !RowsAligned16(p.b, p.k, BColumns(p), p.batch_count)) {
      return absl::UnimplementedError(
          "sm90 kernels load A and B by TMA: leading dimensions and batch strides must be "
          "multiples of 16 bytes");
    }
    const int consumers = c.warps_m;
    if (c.ping_pong && (consumers != 2 || c.split_k != 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sm90 tile ", c.ToString(), ": ping-pong takes two consumer warpgroups and no split-K"));
    }
    // Warpgroups that share one tile: ping-pong gives each its own.
    const int per_tile = c.ping_pong ? 1 : consumers;
    if (c.block_k != kBlockK || c.warps_n != 1 || (consumers != 1 && consumers != 2) ||
        c.block_m % (64 * per_tile) != 0 || c.block_m / per_tile > 128 || c.block_n % 32 != 0 ||
        c.block_n > 256 || c.block_n < 64) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sm90 tile ", c.ToString(),
          " is not valid: block_k 64, 1 or 2 consumer warpgroups of 64 or 128 rows, block_n "
          "64..256 in steps of 32"));
    }
    // B arrives in 64-column boxes when N-major, and a gated tile's halves in
    // whole 64-column blocks.
    if (c.block_n % 64 != 0 && (p.b.layout == Layout::kRowMajor || Gated(p))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sm90 tile ", c.ToString(),
          ": block_n not a multiple of 64 takes a K-major (column-major) B and no gate"));
    }
    if (c.block_m / per_tile / 64 * c.block_n / 2 > 128) {
      return absl::InvalidArgumentError(
          absl::StrCat("sm90 tile ", c.ToString(), " needs more than 128 accumulators a thread"));
    }
    // Splitting every tile of 128 accumulators a thread was never measured to
    // pay for its reduction (docs/kernels.md), so only a last wave's are split,
    // and only warpgroup tiles of 64 x 256: with two m64 blocks (256 x 128)
    // the reduction and the epilogue together spilled.
    if (c.split_k > 1 && c.block_m / per_tile / 64 * c.block_n / 2 > 64) {
      if (c.split_units == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sm90 tile ", c.ToString(),
            ": split-K of every tile takes tiles of at most 64 accumulators a thread"));
      }
      if (c.block_m / per_tile != 64) {
        return absl::InvalidArgumentError(
            absl::StrCat("sm90 tile ", c.ToString(),
                         ": a split tile of 128 accumulators a thread must be 64 x 256 a "
                         "warpgroup"));
      }
    }
    // fp32 D's SiLU and GELUs (common/activation_f32.cuh) interleave enough
    // values that ptxas spilled in warpgroup tiles of two m64 blocks and in
    // ping-pong tiles.
    if (p.d.type == DataType::kF32 && Transcendental(p.epilogue.activation) &&
        (c.ping_pong || c.block_m / per_tile > 64)) {
      return absl::InvalidArgumentError(
          absl::StrCat("sm90 tile ", c.ToString(),
                       ": fp32 D with SiLU or GELU takes warpgroup tiles of 64 rows and no "
                       "ping-pong"));
    }
    if (c.cluster_m != 1 && c.cluster_m != 2) {
      return absl::InvalidArgumentError("sm90 clusters hold 1 or 2 CTAs along M");
    }
    if (c.cluster_k && (c.split_k != 2 || c.cluster_m != 1 || c.split_units != 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("sm90 tile ", c.ToString(),
                       ": a cluster split (cluster_k) takes split_k 2 of every unit and no "
                       "cluster along M"));
    }
    const bool n_major_b = p.b.layout == Layout::kRowMajor;
    if (n_major_b && (c.block_n / 64) % c.cluster_m != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sm90 tile ", c.ToString(), ": the B tile must split into 64-column blocks per CTA"));
    }
    if (Gated(p) && p.b.layout == Layout::kRowMajor && p.n * DataTypeSize(p.b.type) % 16 != 0) {
      // The box of the up half starts at column N of each row, and TMA faults
      // on a box whose start is not 16-byte aligned in the contiguous dimension.
      return absl::UnimplementedError(
          absl::StrCat("sm90 kernels read the up half of a row-major gated B at column N = ", p.n,
                       ", which must be a multiple of 8 elements (16 bytes) for TMA"));
    }
    if (Gated(p) && (c.block_n % 128 != 0 || c.split_k != 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sm90 tile ", c.ToString(),
          ": a gated tile is 128 or 256 columns wide (two halves of whole 64-column blocks) "
          "and takes no split-K"));
    }
    if (c.stages < 2 || c.stages > 12) {
      return absl::InvalidArgumentError("sm90 kernels need 2..12 pipeline stages");
    }
    if (SmemBytes(p, c) > target.shared_bytes_per_block_optin) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sm90 tile ", c.ToString(), " needs ", SmemBytes(p, c),
          " bytes of shared memory, the target allows ", target.shared_bytes_per_block_optin));
    }
    if (Units(p, c) * c.split_k > INT32_MAX / 2) {
      return absl::UnimplementedError("too many tiles");
    }
    return absl::OkStatus();
  }

  LaunchShape Shape(const GemmProblem& p, const KernelConfig& c,
                    const TargetInfo& target) const override {
    LaunchShape s;
    const int64_t clusters = std::min<int64_t>(Units(p, c) * c.split_k,
                                               std::max(1, target.multiprocessors / c.cluster_m));
    s.grid[0] = static_cast<uint32_t>(clusters * c.cluster_m);
    s.block[0] = static_cast<uint32_t>(128 * (1 + c.warps_m));
    s.shared_bytes = static_cast<uint32_t>(SmemBytes(p, c));
    s.cluster_x = static_cast<uint32_t>(c.cluster_m);
    s.pdl = c.pdl;
    s.tensor_maps = true;
    if (c.cluster_k) {
      // Pairs of CTAs, the two splits of one unit (kernels_src/sm90/split_cluster.cuh):
      // an even grid, so that both splits of a unit land in one cluster.
      s.grid[0] = static_cast<uint32_t>(
          std::min<int64_t>(Units(p, c), std::max(1, target.multiprocessors / 2)) * 2);
      s.cluster_x = 2;
      return s;
    }
    if (c.split_k > 1) {
      // Tickets per (split unit, cluster rank, consumer), padded to 256
      // bytes, then split_k fp32 partial tiles each (kernels_src/sm90/split_k.cuh).
      const int64_t slots = SplitUnits(p, c) * c.cluster_m * c.warps_m;
      s.workspace_bytes =
          static_cast<size_t>(CeilDiv(slots * 4, 256) * 256 +
                              slots * c.split_k * (c.block_m / c.warps_m) * c.block_n * 4);
    }
    return s;
  }

  std::vector<KernelConfig> Candidates(const GemmProblem& p, const TargetInfo& target,
                                       TuningPolicy policy) const override {
    std::vector<KernelConfig> pool;
    // 192 columns: where N or the tile count fits neither 128 nor 256 well
    // (3000 x 3000 has 4.4 waves of 128 x 128 tiles, 2.9 of 128 x 192).
    // 224 and 160 (128-row tiles, K-major B, no gate): where the widths of 64
    // leave a last wave part empty (384 x 4608 x 3072 x 4: 1.64 waves of
    // 128 x 256 tiles, 1.91 of 128 x 224). The staged epilogue stores their
    // last 64 columns as one block overlapping the one before.
    for (int bn : {256, 224, 192, 160, 128, 64}) {
      for (int cluster : {2, 1}) {
        pool.push_back(Make(128, bn, 2, 4, cluster));
        if (bn % 64 != 0) continue;
        if (bn == 128) pool.push_back(Make(256, bn, 2, 4, cluster));
        pool.push_back(Make(64, bn, 1, 6, cluster));
        if (bn == 128 || bn == 256) {
          // Ping-pong tiles of 128 accumulators a thread: 128 x 128 and 64 x 256.
          KernelConfig pp = Make(bn == 128 ? 128 : 64, bn, 2, 4, cluster);
          pp.ping_pong = true;
          pool.push_back(pp);
        }
      }
    }
    // The deepest ring that fits, for each tile. With programmatic dependent
    // launch the next kernel's CTAs start on an SM while this one's still run,
    // but only if they fit beside it: a 16-token MLP block (gated GEMM, then a
    // small-M down projection) ran 6% slower when the gated kernel's ring left
    // 10 KB free than when it left 18 or 33 KB, and equal with PDL off
    // (docs/kernels.md). Small-M problems are memory-bound and need no deep
    // ring, so theirs stops 32 KB short.
    const int budget = p.m <= kSmallM ? target.shared_bytes_per_block_optin - kRoomForNext
                                      : target.shared_bytes_per_block_optin;
    std::vector<std::pair<double, KernelConfig>> ranked, ping_pong;
    for (KernelConfig c : pool) {
      while (c.stages < 12 && SmemBytes(p, Deeper(c)) <= budget) c = Deeper(c);
      while (c.stages > 2 && SmemBytes(p, c) > budget) --c.stages;
      if (!Supports(p, c, target).ok()) continue;
      if (c.ping_pong) {
        // Only the exhaustive policy times ping-pong tiles: on the H100 they
        // lost to the cooperative 128 x 256 tiles wherever both ran
        // (docs/kernels.md), so the fast list keeps its four.
        ping_pong.emplace_back(Cost(p, c, target), c);
        continue;
      }
      ranked.emplace_back(Cost(p, c, target), c);
      // Split-K where the tiles leave SMs idle and each split keeps k-tiles.
      // Up to 4: each split beyond the first cost 2-3 us in the exhaustive S2
      // timings, and with 6 or more the reduction of a 64-accumulator tile spills.
      const int64_t ctas = std::max(1, target.multiprocessors / c.cluster_m);
      for (int split : {2, 3, 4}) {
        KernelConfig sc = c;
        sc.split_k = split;
        if (Units(p, c) * split > ctas * 5 / 4 || CeilDiv(p.k, kBlockK) < 4 * split) break;
        if (Supports(p, sc, target).ok()) ranked.emplace_back(Cost(p, sc, target), sc);
        // Its twin whose two splits reduce through distributed shared memory.
        KernelConfig kc = sc;
        kc.cluster_k = true;
        while (kc.stages > 2 && SmemBytes(p, kc) > budget) --kc.stages;
        if (split == 2 && Supports(p, kc, target).ok()) {
          ranked.emplace_back(Cost(p, kc, target), kc);
        }
      }
      // Where whole waves leave a last one less than half full, its units
      // alone are split so that it fills the SMs too (2304 x 2304 x 8192 in
      // 128 x 256 tiles: a wave and 30 tiles, 185 -> 121 us on the H100).
      // Only the cheapest split of each tile, so that the fast list keeps
      // other tiles.
      const int64_t units = Units(p, c), rest = units % ctas;
      if (units > ctas && rest > 0 && 2 * rest <= ctas) {
        std::pair<double, KernelConfig> best{0.0, c};
        for (int split : {2, 3, 4}) {
          KernelConfig sc = c;
          sc.split_k = split;
          sc.split_units = static_cast<int>(rest);
          if (rest * split > ctas || CeilDiv(p.k, kBlockK) < 4 * split) break;
          const double cost = Cost(p, sc, target);
          if (Supports(p, sc, target).ok() && (best.second.split_k == 1 || cost < best.first)) {
            best = {cost, sc};
          }
        }
        if (best.second.split_k > 1) ranked.push_back(best);
      }
    }
    // The fast list takes at most one last-wave split: the model tells such
    // a split from whole tiles only within a few percent, and splits of
    // several tiles crowded out the whole tile that won (640 x 4608 x 5000:
    // 128 x 256 tiles in pairs, 76 us, against 88-137 for the splits).
    std::vector<KernelConfig> out = RankByCost(std::move(ranked), TuningPolicy::kExhaustive, 0);
    if (policy != TuningPolicy::kExhaustive) {
      std::vector<KernelConfig> kept;
      bool split_kept = false, odd_kept = false;
      for (const KernelConfig& c : out) {
        if (kept.size() == (policy == TuningPolicy::kFast ? 4u : 1u)) break;
        if (c.split_units > 0 && split_kept) continue;
        // At most one width that is not a multiple of 64, beside proven ones.
        if (c.block_n % 64 != 0 && (odd_kept || policy != TuningPolicy::kFast)) continue;
        split_kept = split_kept || c.split_units > 0;
        odd_kept = odd_kept || c.block_n % 64 != 0;
        kept.push_back(c);
      }
      out = std::move(kept);
    }
    if (policy == TuningPolicy::kExhaustive) {
      for (const KernelConfig& c : RankByCost(std::move(ping_pong), policy, 0)) out.push_back(c);
    }
    return out;
  }

  std::string ExtraSpecFields(const GemmProblem& p, const KernelConfig& c) const override {
    return absl::StrCat(
        "  static constexpr int kConsumers = ", c.warps_m, ", kClusterM = ", c.cluster_m,
        ", kGroupM = ", kGroupM,
        ";\n  static constexpr bool kTmaStore = ", Sm90TmaStore(p, c) ? "true" : "false", ";\n",
        Gated(p) ? "  static constexpr int kGate = 1;\n" : "",
        c.ping_pong ? "  static constexpr bool kPingPong = true;\n" : "",
        c.early_b ? "  static constexpr bool kEarlyB = true;\n" : "",
        c.split_units > 0
            ? absl::StrCat("  static constexpr int kSplitUnits = ", c.split_units, ";\n")
            : "",
        c.cluster_k ? "  static constexpr bool kSplitCluster = true;\n" : "");
  }

 private:
  static KernelConfig Deeper(KernelConfig c) {
    ++c.stages;
    return c;
  }

  // Mirrors Sm90Smem in kernels_src/sm90/gemm_tma_wgmma.cuh.
  static int SmemBytes(const GemmProblem& p, const KernelConfig& c) {
    const bool tma_store = Sm90TmaStore(p, c);
    const int staging = tma_store ? c.warps_m * kStagingPerConsumer : 0;
    // The staged epilogue takes 16-bit column biases from shared memory
    // (bias_prefetch.cuh); fp32 ones it reads with C.
    const int bias = tma_store && DataTypeSize(p.d.type) == 2 &&
                             p.epilogue.bias == BiasMode::kPerColumn && !Gated(p)
                         ? c.warps_m * c.block_n * 2
                         : 0;
    // A cluster split's partial tiles: a float per accumulator of each consumer
    // thread, and two barriers per consumer.
    const int split =
        c.cluster_k ? c.warps_m * 128 * (c.block_m / c.warps_m / 64) * (c.block_n / 2) * 4 + 32 : 0;
    return 1024 + c.stages * (c.block_m + c.block_n) * kBlockK * 2 + staging + bias + split +
           16 * c.stages + 16;
  }
};

}  // namespace

bool Sm90TmaStore(const GemmProblem& p, const KernelConfig& c) {
  // TMA clips stores past the last column only at 16-byte granularity, so the
  // rows must end on a 16-byte boundary as well as start on one.
  if (p.d.layout != Layout::kRowMajor || p.n * DataTypeSize(p.d.type) % 16 != 0 ||
      !RowsAligned16(p.d, p.m, p.n, p.batch_count)) {
    return false;
  }
  if (p.d.type == DataType::kF16 || p.d.type == DataType::kBF16) return true;
  // fp32 D stages only tiles before a warpgroup's last (gemm_tma_wgmma.cuh),
  // so with one tile per CTA the staging would only cost shared memory and
  // time (docs/kernels.md, "fp32 D").
  return p.d.type == DataType::kF32 && Units(p, c) * c.cluster_m * c.split_k > kFp32StagedMinTiles;
}

const KernelFamily& Sm90FamilyInstance() {
  static const Sm90Family kFamily;
  return kFamily;
}

}  // namespace jitgemm::jit
