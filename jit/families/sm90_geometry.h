// The sm90 family's host-side geometry (kernels_src/sm90/): tile and work
// unit counts, shared memory per CTA, config constructors, and the rules a
// config must pass (sm90_rules.cc). Internal to jit/families/sm90*.cc.
//
// Thread safety: pure functions.
#ifndef JITGEMM_JIT_FAMILIES_SM90_GEOMETRY_H_
#define JITGEMM_JIT_FAMILIES_SM90_GEOMETRY_H_

#include <cstdint>

#include "absl/status/status.h"
#include "jit/family.h"
#include "jit/kernel_config.h"
#include "jit/specializer.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit::sm90 {

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
// The fast list adds a ping-pong tile for k loops of at most this many slices.
constexpr int64_t kPingPongMaxKTiles = 8;
// ... and a ping-pong tile of 160 or 192 accumulators a thread for k loops of
// at most this many.
constexpr int64_t kWidePingPongMaxKTiles = 32;

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline KernelConfig Make(int bm, int bn, int consumers, int stages, int cluster) {
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

inline bool Gated(const GemmProblem& p) { return p.epilogue.gate != Gate::kNone; }

inline bool Transcendental(Activation a) {
  return a == Activation::kSilu || a == Activation::kGeluTanh || a == Activation::kGeluErf;
}

// Columns of D one tile covers: a gated tile computes gate and up halves.
inline int OutColumns(const GemmProblem& p, const KernelConfig& c) {
  return Gated(p) ? c.block_n / 2 : c.block_n;
}

// Columns of one shared-memory block of an N-major B: 64 (128-byte
// swizzle), or 32 (64-byte swizzle) for a tile, or a gated tile's halves,
// not made of whole 64-column blocks. kernels_src/sm90/mainloop.cuh
// (kBCols) agrees.
inline int NMajorBBlockColumns(const GemmProblem& p, const KernelConfig& c) {
  return (Gated(p) ? c.block_n / 2 : c.block_n) % 64 != 0 ? 32 : 64;
}

// Whether the CTAs of a cluster load unequal shares of an N-major B tile:
// three, five or seven column blocks over a pair, the first taking one more.
inline bool UnevenBSplit(const GemmProblem& p, const KernelConfig& c) {
  return p.b.layout == Layout::kRowMajor &&
         (c.block_n / NMajorBBlockColumns(p, c)) % c.cluster_m != 0;
}

// Accumulators a consumer thread holds: its warpgroup's rows in m64 blocks
// times half the tile's columns.
inline int Accumulators(const KernelConfig& c) {
  const int rows = c.ping_pong ? c.block_m : c.block_m / c.warps_m;
  return rows / 64 * c.block_n / 2;
}

inline int64_t Units(const GemmProblem& p, const KernelConfig& c) {
  return CeilDiv(CeilDiv(p.m, c.block_m), c.cluster_m) * CeilDiv(p.n, OutColumns(p, c)) *
         p.batch_count;
}

// Units whose k loop is split (the last ones), or all of them.
inline int64_t SplitUnits(const GemmProblem& p, const KernelConfig& c) {
  if (c.split_k == 1) return Units(p, c);
  return c.split_units > 0 ? c.split_units : Units(p, c);
}

inline bool RowsAligned16(const Operand& op, int64_t rows, int64_t cols, int64_t batch) {
  return OperandAlignment(op, rows, cols, batch, 16) >= 16;
}

// Mirrors Sm90Smem in kernels_src/sm90/gemm_tma_wgmma.cuh.
int SmemBytes(const GemmProblem& p, const KernelConfig& c);

// Whether the sm90 kernels can run `c` for `p` on `target`: Unimplemented for
// what the family cannot serve at all, InvalidArgument for a config it
// cannot build or that ptxas spilled on.
absl::Status Validate(const GemmProblem& p, const KernelConfig& c, const TargetInfo& target);

}  // namespace jitgemm::jit::sm90

#endif  // JITGEMM_JIT_FAMILIES_SM90_GEOMETRY_H_
