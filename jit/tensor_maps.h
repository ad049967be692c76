// TMA descriptors (CUtensorMap) of the sm90 family's operands, encoded on the
// host through the driver table for each run's pointers and passed to the
// kernel as one __grid_constant__ parameter (kernels_src/sm90/gemm_tma_wgmma.cuh,
// struct TensorMaps).
//
// Every map is 3-D: (contiguous dimension, strided dimension, batch), with
// 128-byte swizzle and 64-element-wide boxes; reads past an edge return zeros
// and stores past an edge are dropped, so tiles need not divide the problem.
// Reads are promoted to 256-byte L2 requests, or 128 where the operand's lines
// are off 128-byte boundaries.
// Encoding is host-only work (no device call, allocation or sync), which
// keeps Plan::Run safe inside stream capture.
//
// Thread safety: pure functions of their arguments.
#ifndef JITGEMM_JIT_TENSOR_MAPS_H_
#define JITGEMM_JIT_TENSOR_MAPS_H_

#include <cuda.h>

#include "absl/status/status.h"
#include "jit/driver_api.h"
#include "jit/kernel_config.h"
#include "jitgemm/problem.h"

namespace jitgemm::jit {

// 128: CUDA 13's CUtensorMap is 128-byte aligned, and clang rejects an
// alignas weaker than a member's (the kernel parameter itself needs 64).
struct alignas(128) Sm90TensorMaps {
  CUtensorMap a;
  CUtensorMap b;
  CUtensorMap d;  // encoded only when the kernel stores D by TMA
  // The last M (N) tile of a K-major A (B: no cluster, no gate) that reaches
  // past the matrix: a box only as deep as the rows left (in 8-row swizzle
  // atoms); a copy of `a` (`b`) where there is no such tile.
  CUtensorMap a_tail;
  CUtensorMap b_tail;
};
static_assert(sizeof(Sm90TensorMaps) == 640, "must match the device-side TensorMaps");

// REQUIRES: the sm90 family supports (problem, config). InvalidArgument when
// the driver refuses a map (e.g. a pointer that is not 16-byte aligned).
absl::Status EncodeSm90TensorMaps(const DriverApi& api, const GemmProblem& problem,
                                  const KernelConfig& config, const void* a, const void* b,
                                  const void* d, Sm90TensorMaps* maps);

}  // namespace jitgemm::jit

#endif  // JITGEMM_JIT_TENSOR_MAPS_H_
