// Host side of kernels_src/sm80/gemm_mma.cuh: tensor-core GEMM with
// mma.sync + ldmatrix + cp.async for fp16 / bf16 operands on sm_80 and later.
// Supports any shape, layout and alignment (narrower copies below 16 bytes),
// batches up to 65535 (times split-K), runtime M, an optional in-kernel
// split-K through the plan's zeroed workspace, and gated problems (a tile's
// block_n columns of B are the gate and up columns of block_n / 2 outputs).
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/operand_alignment.h"
#include "jit/families/ranking.h"
#include "jit/family.h"
#include "jit/kernel_config.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit {

const KernelFamily& Sm80FamilyInstance();

namespace {

// Static shared memory the kernel declares beside the dynamic buffer (the
// split-K flag), rounded up.
constexpr int kStaticSmem = 256;
constexpr int kMaxGridYZ = 65535;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
bool Pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

KernelConfig Make(int bm, int bn, int bk, int wm, int wn, int stages, int split = 1) {
  KernelConfig c;
  c.family = Family::kSm80;
  c.block_m = bm;
  c.block_n = bn;
  c.block_k = bk;
  c.warps_m = wm;
  c.warps_n = wn;
  c.stages = stages;
  c.split_k = split;
  return c;
}

int SmemBytes(const KernelConfig& c) { return c.stages * (c.block_m + c.block_n) * c.block_k * 2; }

bool Gated(const GemmProblem& p) { return p.epilogue.gate != Gate::kNone; }

// Columns of D one tile covers: a gated tile computes the gate and up
// columns of block_n / 2 outputs (kernels_src/sm80/gate.cuh).
int OutColumns(const GemmProblem& p, const KernelConfig& c) {
  return Gated(p) ? c.block_n / 2 : c.block_n;
}

int64_t KTiles(const GemmProblem& p, const KernelConfig& c) { return CeilDiv(p.k, c.block_k); }
int64_t TilesN(const GemmProblem& p, const KernelConfig& c) {
  return CeilDiv(p.n, OutColumns(p, c));
}
int64_t Tiles(const GemmProblem& p, const KernelConfig& c) {
  return CeilDiv(p.m, c.block_m) * TilesN(p, c) * p.batch_count;
}

// Registers per thread, roughly: accumulators, two sets of fragments, addressing.
int RegsEstimate(const KernelConfig& c) {
  const int wm = c.block_m / c.warps_m, wn = c.block_n / c.warps_n;
  return std::min(255, 40 + wm * wn / 32 + 2 * (wm / 16 * 4 + wn / 8 * 2));
}

// Blocks that fit on one SM at once (registers, shared memory, threads).
int BlocksPerSm(const KernelConfig& c, const TargetInfo& t) {
  const int threads = 32 * c.warps_m * c.warps_n;
  const int regs = (RegsEstimate(c) + 7) / 8 * 8;
  int by_regs = 65536 / (regs * threads);
  // Shared memory per SM is the per-block opt-in limit plus the 1 KB the
  // driver reserves per block, on every sm_80+ part (A100 164 KB, H100 228 KB).
  const int sm_smem = t.shared_bytes_per_block_optin + 1024;
  int by_smem = sm_smem / (SmemBytes(c) + kStaticSmem + 1024);
  int by_threads = 2048 / threads;
  return std::max(1, std::min({by_regs, by_smem, by_threads, 16}));
}

// Sustained multiply-adds per nanosecond per SM of one warp-tile shape with
// enough warps resident, measured on H100 (mma.sync peaks near half of the
// chip's wgmma rate): larger warp tiles read fewer shared-memory bytes per mma.
double WarpTileRate(const KernelConfig& c) {
  const int wm = c.block_m / c.warps_m, wn = c.block_n / c.warps_n;
  const int area = wm * wn;
  if (area >= 64 * 64) return 1600.0;
  if (area >= 32 * 64) return 1350.0;
  if (area >= 32 * 32) return 1050.0;
  if (area >= 16 * 32) return 700.0;
  return 450.0;
}

// Fewer resident warps hide less latency.
double WarpsFactor(int warps_per_sm) {
  if (warps_per_sm >= 8) return 1.0;
  if (warps_per_sm >= 4) return 0.93;
  if (warps_per_sm >= 2) return 0.6;
  return 0.35;
}

// A block's epilogue (C read, bias, activation, D stored) is a chain of
// steps per accumulator a thread reads out; the blocks resident on an SM run
// theirs side by side, so each wave pays one chain. Where the k loop is short
// the chain decides the tile (docs/tuning.md, "The sm80 epilogue in the cost
// model", has the fit).
constexpr double kEpilogueUsPerAccumulator = 0.04;

// Rows that start on 2 bytes are read by plain loads that a k tile waits for
// (kernels_src/sm80/tile.cuh). A block alone on its SM then pays about
// kNarrowUs + kNarrowUsPerChunk * (16-byte chunks a thread loads) per 64 of
// its K, whatever its products cost; with other blocks resident the waits
// overlap and the model stays as it was. Fitted to every sm80 config of seven
// such problems timed on an H200 (docs/tuning.md, "Rows on 2 bytes").
constexpr double kNarrowUs = 0.95;
constexpr double kNarrowUsPerChunk = 0.165;

bool NarrowRows(const GemmProblem& p) {
  const int64_t batch = p.batch_count;
  return OperandAlignment(p.a, p.m, p.k, batch, 16) <= 2 ||
         OperandAlignment(p.b, p.k, BColumns(p), batch, 16) <= 2;
}

// Estimated microseconds on the target, scaled from H100 measurements: a
// launch and pipeline-fill constant, then the waves of blocks (the last one
// possibly partial) with one epilogue chain each, plus the split-K reduction
// (partial tiles written, read back and zeroed through L2, and the reducing
// block's serial epilogue).
double Cost(const GemmProblem& p, const KernelConfig& c, const TargetInfo& t,
            bool charge_narrow = false) {
  const int64_t tiles = Tiles(p, c);
  const int64_t blocks = tiles * c.split_k;
  const int per_sm = BlocksPerSm(c, t);
  const int64_t slots = static_cast<int64_t>(t.multiprocessors) * per_sm;
  const int64_t full_waves = blocks / slots;
  const int64_t rest = blocks - full_waves * slots;
  const int warps = c.warps_m * c.warps_n;
  const double k_per_block = static_cast<double>(CeilDiv(KTiles(p, c), c.split_k) * c.block_k);
  const double block_macs = static_cast<double>(c.block_m) * c.block_n * k_per_block;
  // Accumulators past M or N are never read out.
  const int64_t rows = std::min<int64_t>(c.block_m, p.m);
  const int64_t cols = std::min<int64_t>(c.block_n, Gated(p) ? 2 * p.n : p.n);
  const double epilogue_us =
      kEpilogueUsPerAccumulator * static_cast<double>(rows * cols) / (32.0 * warps);
  // Scale to the target: rates are per SM, and sm_80 parts run mma.sync at
  // about the same per-SM rate as Hopper's.
  const double chunks = static_cast<double>(c.block_m + c.block_n) * 8.0 / (32.0 * warps);
  const double narrow_us =
      charge_narrow ? k_per_block / 64.0 * (kNarrowUs + kNarrowUsPerChunk * chunks) : 0.0;
  auto wave = [&](int resident) {
    const double rate = WarpTileRate(c) * WarpsFactor(resident * warps);
    const double products = resident * block_macs / rate / 1000.0;
    return (resident == 1 ? std::max(products, narrow_us) : products) + 0.3 + epilogue_us;
  };
  double us = 2.0 + static_cast<double>(full_waves) * wave(per_sm);
  if (rest > 0) us += wave(static_cast<int>(CeilDiv(rest, t.multiprocessors)));
  if (c.split_k > 1) {
    const double bytes = static_cast<double>(tiles) * c.split_k * c.block_m * c.block_n * 4 * 3;
    us += 2.5 + bytes / 3.0e6;  // ~3 TB/s of L2 traffic
  }
  return us;
}

class Sm80Family final : public KernelFamily {
 public:
  Family id() const override { return Family::kSm80; }
  const char* header() const override { return "jitgemm/sm80/gemm_mma.cuh"; }
  const char* kernel_template() const override { return "jitgemm::sm80::GemmMma"; }

  absl::Status Supports(const GemmProblem& p, const KernelConfig& c,
                        const TargetInfo& target) const override {
    if (c.family != Family::kSm80) return absl::InvalidArgumentError("not an sm80 config");
    if (target.sm < 80) {
      return absl::UnimplementedError(
          absl::StrCat("sm80 kernels need sm_80 or later, target is sm_", target.sm));
    }
    if (p.a.type != p.b.type || (p.a.type != DataType::kF16 && p.a.type != DataType::kBF16)) {
      return absl::UnimplementedError("sm80 kernels need fp16 or bf16 A and B of one type");
    }
    if (p.m < 1 || p.n < 1 || p.k < 1) return absl::InvalidArgumentError("empty problem");
    const int warps = c.warps_m * c.warps_n;
    if (!Pow2(c.block_m) || !Pow2(c.block_n) || !Pow2(c.block_k) || c.block_k < 32 ||
        c.block_k > 128 || c.block_m > 256 || c.block_n > 256 || c.warps_m < 1 || c.warps_n < 1 ||
        !Pow2(warps) || warps > 8 || c.block_m % (16 * c.warps_m) != 0 ||
        c.block_n % (16 * c.warps_n) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sm80 tile ", c.ToString(),
          " is not valid: powers of two, block_k 32..128, warp tiles multiples of 16, <= 8 warps"));
    }
    const int wm = c.block_m / c.warps_m, wn = c.block_n / c.warps_n;
    if (wm * wn > 64 * 64 || wm > 128 || wn > 128) {
      return absl::InvalidArgumentError(
          absl::StrCat("sm80 warp tile ", wm, "x", wn, " would spill registers"));
    }
    if (c.stages < 2 || c.stages > 8) {
      return absl::InvalidArgumentError("sm80 kernels need 2..8 pipeline stages");
    }
    if (SmemBytes(c) + kStaticSmem > target.shared_bytes_per_block_optin) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sm80 tile ", c.ToString(), " needs ", SmemBytes(c),
          " bytes of shared memory, the target allows ", target.shared_bytes_per_block_optin));
    }
    if (c.split_k < 1 || c.split_k > 16 || c.split_k > KTiles(p, c)) {
      return absl::InvalidArgumentError(
          absl::StrCat("split_k ", c.split_k, " must be in [1, k tiles = ", KTiles(p, c), "]"));
    }
    if (c.split_k > 1) {
      // Every split must own at least one k-tile.
      const int64_t per = CeilDiv(KTiles(p, c), c.split_k);
      if (per * (c.split_k - 1) >= KTiles(p, c)) {
        return absl::InvalidArgumentError(
            absl::StrCat("split_k ", c.split_k, " leaves a split without k-tiles"));
      }
    }
    if (p.batch_count * c.split_k > kMaxGridYZ) {
      return absl::UnimplementedError(
          "sm80 kernels launch batch * split_k grid z-slices (<= 65535)");
    }
    if (CeilDiv(p.m, c.block_m) > kMaxGridYZ) {
      return absl::UnimplementedError("sm80 grid y is limited to 65535 tiles of M");
    }
    if (CeilDiv(p.m, c.block_m) * TilesN(p, c) > INT32_MAX / 2) {
      return absl::UnimplementedError("too many tiles");
    }
    // Any alignment works: 16-byte cp.async where rows allow, else 8- or
    // 4-byte cp.async, else 2-byte loads.
    return absl::OkStatus();
  }

  LaunchShape Shape(const GemmProblem& p, const KernelConfig& c,
                    const TargetInfo& target) const override {
    LaunchShape s;
    const int64_t tiles_n = TilesN(p, c), tiles_m = CeilDiv(p.m, c.block_m);
    s.grid[0] = static_cast<uint32_t>(tiles_n);
    s.grid[1] = static_cast<uint32_t>(tiles_m);
    s.grid[2] = static_cast<uint32_t>(p.batch_count * c.split_k);
    s.block[0] = static_cast<uint32_t>(32 * c.warps_m * c.warps_n);
    s.shared_bytes = static_cast<uint32_t>(SmemBytes(c));
    if (c.split_k > 1) {
      // Tickets (u32 per tile, padded to 256 bytes) then one fp32 partial tile
      // per split (kernels_src/sm80/epilogue.cuh, SplitK).
      const int64_t tiles = tiles_m * tiles_n * p.batch_count;
      s.workspace_bytes = static_cast<size_t>(CeilDiv(tiles * 4, 256) * 256 +
                                              tiles * c.split_k * c.block_m * c.block_n * 4);
    }
    s.pdl = c.pdl;
    return s;
  }

  std::string ExtraSpecFields(const GemmProblem& p, const KernelConfig&) const override {
    return Gated(p) ? "  static constexpr int kGate = 1;\n" : "";
  }

  std::vector<KernelConfig> Candidates(const GemmProblem& p, const TargetInfo& target,
                                       TuningPolicy policy) const override {
    std::vector<KernelConfig> pool;
    if (policy == TuningPolicy::kExhaustive) {
      // The grid, and the menu's deeper splits and 128-wide k tiles, so that
      // exhaustive tuning times everything fast tuning would.
      pool = Enumerate(p, target);
      const std::vector<KernelConfig> menu = Menu(p, target);
      pool.insert(pool.end(), menu.begin(), menu.end());
    } else {
      pool = Menu(p, target);
    }
    std::vector<std::pair<double, KernelConfig>> ranked;
    for (const KernelConfig& c : pool) {
      if (!Supports(p, c, target).ok()) continue;
      ranked.emplace_back(Cost(p, c, target), c);
    }
    // Rows on 2 bytes: the first guess (what an untimed plan runs) is the
    // config the waits charged; the rest of the list stays as the plain model
    // ranks it, since charging every config reordered the timed list and lost
    // its winners (docs/tuning.md, "Rows on 2 bytes").
    if (NarrowRows(p) && !ranked.empty()) {
      size_t first = 0;
      double first_cost = Cost(p, ranked[0].second, target, /*charge_narrow=*/true);
      for (size_t i = 1; i < ranked.size(); ++i) {
        const double cost = Cost(p, ranked[i].second, target, /*charge_narrow=*/true);
        if (cost < first_cost) {
          first = i;
          first_cost = cost;
        }
      }
      ranked[first].first = -1.0;  // below every plain cost: ranked first
    }
    return RankByCost(std::move(ranked), policy, 8);
  }

 private:
  // The hand-picked tiles, with split-K variants where the tiles alone leave
  // SMs idle and K is long.
  static std::vector<KernelConfig> Menu(const GemmProblem& p, const TargetInfo& target) {
    // Ordered by preference where the model ties.
    std::vector<KernelConfig> base = {
        Make(128, 128, 64, 2, 2, 3), Make(256, 128, 64, 4, 2, 3), Make(128, 256, 64, 2, 4, 3),
        Make(128, 128, 32, 2, 2, 4), Make(64, 128, 64, 1, 4, 3),  Make(128, 64, 64, 2, 2, 3),
        Make(64, 128, 64, 2, 2, 4),  Make(64, 64, 64, 2, 2, 4),   Make(32, 64, 64, 2, 2, 4),
        Make(64, 32, 64, 2, 2, 4),   Make(32, 32, 64, 2, 2, 4),   Make(32, 32, 128, 2, 2, 2),
    };
    std::vector<KernelConfig> out = base;
    for (const KernelConfig& c : base) {
      // Split-K only where the tiles alone leave SMs idle and each split keeps
      // several k-tiles.
      if (Tiles(p, c) >= target.multiprocessors) continue;
      for (int split : {2, 3, 4, 6, 8, 12, 16}) {
        KernelConfig s = c;
        s.split_k = split;
        if (KTiles(p, c) >= 4 * split) out.push_back(s);
      }
    }
    return out;
  }

  static std::vector<KernelConfig> Enumerate(const GemmProblem& p, const TargetInfo& target) {
    std::vector<KernelConfig> out;
    const int warp_grids[][2] = {{1, 1}, {1, 2}, {2, 1}, {2, 2}, {1, 4}, {4, 1}, {2, 4}, {4, 2}};
    for (int bm : {32, 64, 128, 256}) {
      if (bm > 32 && bm / 2 >= p.m) continue;  // a smaller tile covers M
      for (int bn : {32, 64, 128, 256}) {
        if (bn > 32 && bn / 2 >= BColumns(p)) continue;
        for (const auto& w : warp_grids) {
          if (bm % (16 * w[0]) != 0 || bn % (16 * w[1]) != 0) continue;
          const int wm = bm / w[0], wn = bn / w[1];
          if (wm * wn > 64 * 64 || wm * wn < 16 * 32) continue;
          for (int bk : {32, 64}) {
            // 64x64 warp tiles of 4-warp blocks with a 256-wide operand tile
            // at bk 64 run out of registers.
            if (wm * wn == 64 * 64 && w[0] * w[1] == 4 && bk == 64 && (bm == 256 || bn == 256)) {
              continue;
            }
            for (int stages : {3, 4}) {
              for (int split : {1, 2, 4}) {
                if (split > 1 && (KTiles(p, Make(bm, bn, bk, 1, 1, 2)) < 2 * split ||
                                  Tiles(p, Make(bm, bn, bk, 1, 1, 2)) >= target.multiprocessors)) {
                  continue;
                }
                out.push_back(Make(bm, bn, bk, w[0], w[1], stages, split));
              }
            }
          }
        }
      }
    }
    return out;
  }
};

}  // namespace

const KernelFamily& Sm80FamilyInstance() {
  static const Sm80Family kFamily;
  return kFamily;
}

}  // namespace jitgemm::jit
