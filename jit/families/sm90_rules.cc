// The rules a config of the sm90 family must pass, and the shared memory it
// takes: what TMA and wgmma can address, the tile shapes the kernel builds,
// and the shapes ptxas spilled on, each with the measurement or report that
// set it (docs/kernels.md).
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "jit/families/sm90.h"
#include "jit/families/sm90_geometry.h"
#include "jit/family.h"
#include "jit/kernel_config.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit::sm90 {

int SmemBytes(const GemmProblem& p, const KernelConfig& c) {
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
         16 * c.stages;
}

absl::Status Validate(const GemmProblem& p, const KernelConfig& c, const TargetInfo& target) {
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
  if (c.split_k < 1 || c.split_k > 16 || CeilDiv(k_tiles, c.split_k) * (c.split_k - 1) >= k_tiles) {
    return absl::InvalidArgumentError(
        absl::StrCat("sm90 split_k ", c.split_k, " must be 1..16 and leave every split a k-tile (",
                     k_tiles, " k-tiles)"));
  }
  if (c.split_units < 0 || (c.split_units > 0 && (c.split_k < 2 || c.split_units > Units(p, c)))) {
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
  const int accumulators = Accumulators(c);
  if (accumulators > (c.ping_pong ? 192 : 128)) {
    return absl::InvalidArgumentError(absl::StrCat("sm90 tile ", c.ToString(), " needs more than ",
                                                   c.ping_pong ? 192 : 128,
                                                   " accumulators a thread"));
  }
  // Ping-pong tiles of 160 and 192 accumulators a thread take only the
  // epilogues ptxas kept in registers (docs/kernels.md, "Wide ping-pong
  // tiles"). Their kernel zeroes the accumulators before each tile, so that
  // outputs computed beside them (a gate, a GELU, a per-row bias with SiLU)
  // reuse their registers (gemm_tma_wgmma.cuh); reading C still spilled
  // 8-1572 bytes beside a bias, into fp32 D or at 192, as did a bias into
  // fp32 D.
  if (c.ping_pong && accumulators > 128) {
    const Epilogue& e = p.epilogue;
    const bool c_read = e.beta != 0.0f;
    if ((p.d.type == DataType::kF32 && (c_read || e.bias != BiasMode::kNone)) ||
        (c_read && (e.bias != BiasMode::kNone || accumulators > 160))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sm90 tile ", c.ToString(),
          ": a ping-pong tile of more than 128 accumulators a thread takes no C beside a "
          "bias, into fp32 D or at 192, and no fp32 D bias"));
    }
  }
  // Splitting every tile of 128 accumulators a thread was never measured to
  // pay for its reduction (docs/kernels.md), so only a last wave's are split,
  // and only warpgroup tiles of 64 x 256: with two m64 blocks (256 x 128)
  // the reduction and the epilogue together spilled.
  if (c.split_k > 1 && accumulators > 64) {
    if (c.split_units == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("sm90 tile ", c.ToString(),
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
  // A gated tile of 224 columns (halves of 112) into fp32 D with a bias
  // spilled 20-96 bytes; fp32 D takes the gated widths that did not.
  if (Gated(p) && p.d.type == DataType::kF32 && c.block_n == 224) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sm90 tile ", c.ToString(), ": a gated tile into fp32 D is 128, 160, 192 or 256 wide"));
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
  // An odd number of blocks splits unevenly: the first CTA loads one more.
  if (n_major_b && c.block_n / NMajorBBlockColumns(p, c) < c.cluster_m) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sm90 tile ", c.ToString(), ": an N-major B tile needs a column block for each CTA"));
  }
  if (Gated(p) && p.b.layout == Layout::kRowMajor && p.n * DataTypeSize(p.b.type) % 16 != 0) {
    // The box of the up half starts at column N of each row, and TMA faults
    // on a box whose start is not 16-byte aligned in the contiguous dimension.
    return absl::UnimplementedError(
        absl::StrCat("sm90 kernels read the up half of a row-major gated B at column N = ", p.n,
                     ", which must be a multiple of 8 elements (16 bytes) for TMA"));
  }
  // A gated tile's halves are one box each when B is K-major, whole column
  // blocks of 64 or 32 when N-major; each half is stored as at least one
  // 64-column block.
  if (Gated(p) && (c.block_n < 128 || (p.b.layout == Layout::kRowMajor && c.block_n % 64 != 0) ||
                   c.split_k != 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sm90 tile ", c.ToString(),
        ": a gated tile is 128 to 256 columns wide (two halves of 64 to 128; whole 32-column "
        "blocks for a row-major B) and takes no split-K"));
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

}  // namespace jitgemm::jit::sm90
