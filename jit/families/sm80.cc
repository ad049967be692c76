// Host side of kernels_src/sm80/gemm_mma.cuh: tensor-core GEMM with
// mma.sync + ldmatrix + cp.async for fp16 / bf16 operands on sm_80 and later.
// Supports any shape, layout and alignment (narrower copies below 16 bytes),
// batches up to 65535 (times split-K), runtime M and an optional in-kernel
// split-K through the plan's zeroed workspace.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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

int SmemBytes(const KernelConfig& c) {
  return c.stages * (c.block_m + c.block_n) * c.block_k * 2;
}

int64_t KTiles(const GemmProblem& p, const KernelConfig& c) { return CeilDiv(p.k, c.block_k); }

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

// Relative tensor-core efficiency of a warp tile (operand reuse per ldmatrix).
double WarpTileEfficiency(const KernelConfig& c) {
  const int wm = c.block_m / c.warps_m, wn = c.block_n / c.warps_n;
  const double area = static_cast<double>(wm) * wn;
  if (area >= 64 * 64) return 1.0;
  if (area >= 32 * 64) return 0.85;
  if (area >= 32 * 32) return 0.65;
  if (area >= 16 * 32) return 0.45;
  return 0.3;
}

// A rough time model in arbitrary units: waves of blocks, each doing its
// share of the MACs at a rate set by the warp tile and the warps per SM, plus
// the latency of filling the pipeline, plus the split-K workspace traffic.
double Cost(const GemmProblem& p, const KernelConfig& c, const TargetInfo& t) {
  const int64_t tiles = CeilDiv(p.m, c.block_m) * CeilDiv(p.n, c.block_n) * p.batch_count;
  const int64_t blocks = tiles * c.split_k;
  const int per_sm = BlocksPerSm(c, t);
  const int64_t slots = static_cast<int64_t>(t.multiprocessors) * per_sm;
  const int64_t waves = CeilDiv(blocks, slots);
  const int64_t k_tiles = CeilDiv(KTiles(p, c), c.split_k);
  const int warps_per_sm =
      static_cast<int>(std::min<int64_t>(per_sm, CeilDiv(blocks, t.multiprocessors))) *
      c.warps_m * c.warps_n;
  const double hiding = warps_per_sm >= 8 ? 1.0 : warps_per_sm >= 4 ? 0.8 : 0.55;
  // MACs one SM does per unit time at full efficiency (m16n8k16 mma per clock-ish).
  const double sm_rate = 1024.0 * WarpTileEfficiency(c) * hiding;
  const double resident = static_cast<double>(std::min<int64_t>(per_sm, blocks));
  const double wave_time =
      resident * c.block_m * c.block_n * static_cast<double>(k_tiles * c.block_k) / sm_rate;
  // Pipeline fill and epilogue: about one global round trip (~1500 clocks)
  // per wave, plus a small cost per k-tile iteration.
  const double latency = 1500.0 + 30.0 * static_cast<double>(k_tiles);
  double cost = static_cast<double>(waves) * (wave_time + latency);
  if (c.split_k > 1) {
    // Partial tiles written, read back and zeroed through L2, and the reducer's
    // serial epilogue.
    const double bytes = static_cast<double>(tiles) * c.split_k * c.block_m * c.block_n * 4 * 3;
    cost += bytes / (t.multiprocessors * 64.0) + 1000.0;
  }
  return cost;
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
    if (!Pow2(c.block_m) || !Pow2(c.block_n) || !Pow2(c.block_k) || c.block_k < 16 ||
        c.block_k > 128 || c.block_m > 256 || c.block_n > 256 || c.warps_m < 1 ||
        c.warps_n < 1 || !Pow2(warps) || warps > 8 || c.block_m % (16 * c.warps_m) != 0 ||
        c.block_n % (16 * c.warps_n) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("sm80 tile ", c.ToString(),
                       " is not valid: powers of two, warp tiles multiples of 16, <= 8 warps"));
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
      return absl::InvalidArgumentError(
          absl::StrCat("sm80 tile ", c.ToString(), " needs ", SmemBytes(c),
                       " bytes of shared memory, the target allows ",
                       target.shared_bytes_per_block_optin));
    }
    if (c.split_k < 1 || c.split_k > 64 || c.split_k > KTiles(p, c)) {
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
    if (CeilDiv(p.m, c.block_m) * CeilDiv(p.n, c.block_n) > INT32_MAX / 2) {
      return absl::UnimplementedError("too many tiles");
    }
    // Any alignment works: 16-byte cp.async where rows allow, else 8- or
    // 4-byte cp.async, else 2-byte loads.
    return absl::OkStatus();
  }

  LaunchShape Shape(const GemmProblem& p, const KernelConfig& c,
                    const TargetInfo& target) const override {
    LaunchShape s;
    const int64_t tiles_n = CeilDiv(p.n, c.block_n), tiles_m = CeilDiv(p.m, c.block_m);
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

  std::vector<KernelConfig> Candidates(const GemmProblem& p, const TargetInfo& target,
                                       TuningPolicy policy) const override {
    std::vector<KernelConfig> pool;
    if (policy == TuningPolicy::kExhaustive) {
      pool = Enumerate(p);
    } else {
      pool = Menu(p);
    }
    std::vector<std::pair<double, KernelConfig>> ranked;
    for (const KernelConfig& c : pool) {
      if (!Supports(p, c, target).ok()) continue;
      ranked.emplace_back(Cost(p, c, target), c);
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<KernelConfig> out;
    for (const auto& [cost, c] : ranked) {
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
    const size_t limit = policy == TuningPolicy::kHeuristic ? 1
                         : policy == TuningPolicy::kFast    ? 8
                                                            : out.size();
    if (out.size() > limit) out.resize(limit);
    return out;
  }

 private:
  // The hand-picked tiles, with split-K variants where the tiles alone leave
  // SMs idle and K is long.
  static std::vector<KernelConfig> Menu(const GemmProblem& p) {
    std::vector<KernelConfig> base = {
        Make(128, 256, 32, 2, 4, 4), Make(256, 128, 32, 4, 2, 4), Make(128, 128, 32, 2, 2, 4),
        Make(128, 128, 64, 2, 2, 3), Make(64, 128, 32, 2, 2, 4),  Make(128, 64, 32, 2, 2, 4),
        Make(64, 64, 64, 2, 2, 4),   Make(64, 256, 32, 1, 4, 4),  Make(32, 64, 64, 2, 2, 4),
        Make(64, 32, 64, 2, 2, 4),   Make(32, 32, 64, 2, 2, 4),   Make(32, 32, 128, 2, 2, 2),
    };
    std::vector<KernelConfig> out = base;
    for (const KernelConfig& c : base) {
      for (int split : {2, 3, 4, 8}) {
        KernelConfig s = c;
        s.split_k = split;
        // Only worth it when each split still has several k-tiles.
        if (KTiles(p, c) >= 4 * split) out.push_back(s);
      }
    }
    return out;
  }

  static std::vector<KernelConfig> Enumerate(const GemmProblem& p) {
    std::vector<KernelConfig> out;
    const int warp_grids[][2] = {{1, 1}, {1, 2}, {2, 1}, {2, 2}, {1, 4}, {4, 1}, {2, 4}, {4, 2}};
    for (int bm : {32, 64, 128, 256}) {
      if (bm > 32 && bm / 2 >= p.m) continue;  // a smaller tile covers M
      for (int bn : {32, 64, 128, 256}) {
        if (bn > 32 && bn / 2 >= p.n) continue;
        for (const auto& w : warp_grids) {
          if (bm % (16 * w[0]) != 0 || bn % (16 * w[1]) != 0) continue;
          const int wm = bm / w[0], wn = bn / w[1];
          if (wm * wn > 64 * 64 || wm * wn < 16 * 32) continue;
          for (int bk : {32, 64}) {
            for (int stages : {3, 4}) {
              for (int split : {1, 2, 4}) {
                if (split > 1 && KTiles(p, Make(bm, bn, bk, 1, 1, 2)) < 2 * split) continue;
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
