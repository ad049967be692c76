// KernelConfig: the tile shape and options a kernel family is specialised with,
// and LaunchShape: how a specialised kernel is launched.
#ifndef JITGEMM_JIT_KERNEL_CONFIG_H_
#define JITGEMM_JIT_KERNEL_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace jitgemm::jit {

enum class Family : int {
  kSimt = 0,         // exact fp32 on CUDA cores, any problem
  kSm80 = 1,         // mma.sync + ldmatrix + cp.async tensor cores, sm_80 and later
  kSmallM = 2,       // M <= 64: weights streamed at memory speed, split-K in one kernel
  kElementwise = 3,  // the epilogue alone, after a cuBLAS product
  kSm90 = 4,         // TMA + wgmma, warp-specialised and persistent, sm_90a
  kGate = 5,         // act(gate) * up over a cuBLAS product of a gated problem
};

// "simt", "sm80", "small_m", "elementwise", "sm90", "gate"
const char* FamilyName(Family family);

struct KernelConfig {
  Family family = Family::kSimt;
  int block_m = 64;
  int block_n = 64;
  int block_k = 16;
  int warps_m = 2;
  int warps_n = 2;
  int stages = 1;
  int split_k = 1;
  bool pdl = true;  // the family may use PDL; Options::pdl and the arch have the last word
  // M is a run-time argument instead of a constant (decode-style M that varies).
  bool runtime_m = false;
  // B may be read before the previous grid on the stream finishes (PDL and
  // Options::constant_b both required; ProposeConfigs drops it otherwise).
  bool early_b = false;
  // small_m: x reaches shared memory by bulk copies (1) or bulk copies
  // multicast to clusters of x_copy CTAs (2, 4, 8); 0: per-lane cp.async.
  int x_copy = 0;
  // small_m: the split_k CTAs of an n tile form one thread-block cluster and
  // reduce through distributed shared memory (no workspace, sm_90). sm90: the
  // same for split_k = 2, the two splits of a tile in a cluster of 2.
  bool cluster_k = false;
  // sm90: CTAs per thread-block cluster along M, sharing B tiles by multicast.
  int cluster_m = 1;
  // sm90: the warps_m = 2 consumer warpgroups take alternate tiles of
  // block_m x block_n each (ping-pong) instead of sharing every tile.
  bool ping_pong = false;
  // sm90 with split_k > 1: only the last split_units units (tiles, or
  // clusters of tiles) are split, those of a last, partial wave; 0: all.
  int split_units = 0;

  // Canonical text: part of the cache key, so every field must appear.
  std::string ToString() const;
  friend bool operator==(const KernelConfig&, const KernelConfig&) = default;
};

struct LaunchShape {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;   // dynamic shared memory
  size_t workspace_bytes = 0;  // zeroed device memory the plan owns, passed as args.workspace
  bool pdl = false;            // launch with programmatic stream serialization
  uint32_t cluster_x = 1;      // CTAs per thread-block cluster along x (1: no cluster)
  uint32_t cluster_y = 1;      // ... and along y
  // The kernel takes the TMA descriptors of A, B and D (jit/tensor_maps.h)
  // as a second parameter, encoded for each run's pointers.
  bool tensor_maps = false;
};

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_KERNEL_CONFIG_H_
