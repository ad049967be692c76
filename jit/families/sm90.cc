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
// the other families. The rules a config must pass are in sm90_rules.cc.
#include "jit/families/sm90.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "jit/families/ranking.h"
#include "jit/families/sm90_geometry.h"
#include "jit/family.h"
#include "jit/kernel_config.h"
#include "jit/specializer.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit {

const KernelFamily& Sm90FamilyInstance();

namespace {

using sm90::Accumulators;
using sm90::CeilDiv;
using sm90::Gated;
using sm90::kBlockK;
using sm90::kFp32StagedMinTiles;
using sm90::kGroupM;
using sm90::kPingPongMaxKTiles;
using sm90::kRoomForNext;
using sm90::kSmallM;
using sm90::kWidePingPongMaxKTiles;
using sm90::Make;
using sm90::OutColumns;
using sm90::RowsAligned16;
using sm90::SmemBytes;
using sm90::SplitUnits;
using sm90::UnevenBSplit;
using sm90::Units;
using sm90::Validate;
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

class Sm90Family final : public KernelFamily {
 public:
  Family id() const override { return Family::kSm90; }
  const char* header() const override { return "jitgemm/sm90/gemm_tma_wgmma.cuh"; }
  const char* kernel_template() const override { return "jitgemm::sm90::GemmTmaWgmma"; }

  absl::Status Supports(const GemmProblem& p, const KernelConfig& c,
                        const TargetInfo& target) const override {
    return Validate(p, c, target);
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
    // 224 and 160 (128-row tiles; gated tiles of a K-major B too): where the widths of 64
    // leave a last wave part empty (384 x 4608 x 3072 x 4: 1.64 waves of
    // 128 x 256 tiles, 1.91 of 128 x 224). The staged epilogue stores their
    // last 64 columns as one block overlapping the one before.
    for (int bn : {256, 224, 192, 160, 128, 64}) {
      for (int cluster : {2, 1}) {
        pool.push_back(Make(128, bn, 2, 4, cluster));
        // Ping-pong tiles of 160 and 192 accumulators a thread.
        if (bn == 192 || bn == 160) {
          KernelConfig pp = Make(128, bn, 2, 4, cluster);
          pp.ping_pong = true;
          pool.push_back(pp);
        }
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
    std::vector<std::pair<double, KernelConfig>> ranked, ping_pong, wide_ping_pong;
    for (KernelConfig c : pool) {
      while (c.stages < 12 && SmemBytes(p, Deeper(c)) <= budget) c = Deeper(c);
      while (c.stages > 2 && SmemBytes(p, c) > budget) --c.stages;
      if (!Supports(p, c, target).ok()) continue;
      if (c.ping_pong) {
        // On the H100 ping-pong tiles lost to the cooperative 128 x 256 tiles
        // on long k loops (docs/kernels.md): the fast list takes one only
        // where k is short (below).
        (Accumulators(c) > 128 ? wide_ping_pong : ping_pong).emplace_back(Cost(p, c, target), c);
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
    // A pair that splits an N-major B's blocks unevenly is there for the
    // fuller last wave of its width, so it is kept only where the model puts
    // it first: behind, it can only win by the tuner's noise at the power cap
    // (8192^3: 128 x 224 pairs ran 4-17% behind the 256 x 128 pairs that the
    // model put 3.6% ahead, and the tuner took them in 3 of 7 runs).
    std::vector<KernelConfig> out = RankByCost(std::move(ranked), TuningPolicy::kExhaustive, 0);
    if (policy != TuningPolicy::kExhaustive) {
      std::vector<KernelConfig> kept;
      bool split_kept = false, odd_kept = false;
      for (const KernelConfig& c : out) {
        if (kept.size() == (policy == TuningPolicy::kFast ? 4u : 1u)) break;
        if (!kept.empty() && UnevenBSplit(p, c)) continue;
        if (c.split_units > 0 && split_kept) continue;
        // At most one width that is not a multiple of 64, beside proven ones.
        if (c.block_n % 64 != 0 && (odd_kept || policy != TuningPolicy::kFast)) continue;
        split_kept = split_kept || c.split_units > 0;
        odd_kept = odd_kept || c.block_n % 64 != 0;
        kept.push_back(c);
      }
      out = std::move(kept);
    }
    if (policy == TuningPolicy::kFast) {
      // A wide ping-pong tile hides each tile's epilogue behind the other
      // warpgroup's mainloop at the wgmma rate of a 128 x 192 tile. That paid
      // where k loops are short to mid-length and the tiles cover M and N
      // closely (K = 1024 and 2048: 5-9% faster than the cooperative
      // 128 x 256 tile), not at K = 4096 or on 4096 columns in 192-wide tiles
      // (docs/kernels.md, "Wide ping-pong tiles"). It is timed first: the
      // tuner's first candidate runs on the coolest card, and the timings of
      // the cooperative tile taken first read 2-8% faster than it runs under
      // sustained load, where the wide ping-pong tile led by 5-9%.
      // The cheapest one only, of those that split B evenly (above).
      for (const KernelConfig& c : RankByCost(wide_ping_pong, TuningPolicy::kExhaustive, 0)) {
        if (UnevenBSplit(p, c)) continue;
        const double covered =
            static_cast<double>(CeilDiv(p.m, c.block_m) * c.block_m) *
            static_cast<double>(CeilDiv(p.n, OutColumns(p, c)) * OutColumns(p, c));
        if (CeilDiv(p.k, kBlockK) <= kWidePingPongMaxKTiles &&
            Units(p, c) >= 4 * target.multiprocessors &&
            covered <= 1.02 * static_cast<double>(p.m) * static_cast<double>(p.n)) {
          out.insert(out.begin(), c);
        }
        break;
      }
    }
    if (policy == TuningPolicy::kExhaustive) {
      for (const KernelConfig& c : RankByCost(std::move(ping_pong), policy, 0)) out.push_back(c);
      for (const KernelConfig& c : RankByCost(std::move(wide_ping_pong), policy, 0)) {
        out.push_back(c);
      }
    } else if (policy == TuningPolicy::kFast && CeilDiv(p.k, kBlockK) <= kPingPongMaxKTiles) {
      // Where a tile's k loop is short its epilogue weighs as much, and a
      // ping-pong tile hides one warpgroup's behind the other's mainloop;
      // only where its tiles are full and fill the SMs (a 128-row tile for
      // M = 1 took the place of the sm80 config that won: the fast list
      // holds 8 configs of all families).
      for (const KernelConfig& c : RankByCost(std::move(ping_pong), TuningPolicy::kExhaustive, 0)) {
        if (p.m >= c.block_m && Units(p, c) >= target.multiprocessors) {
          out.push_back(c);
          break;
        }
      }
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
};

}  // namespace

int Sm90NMajorBBoxRowBytes(const GemmProblem& p, const KernelConfig& c) {
  return sm90::NMajorBBlockColumns(p, c) * static_cast<int>(DataTypeSize(p.b.type));
}

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
