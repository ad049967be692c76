// sm80 tensor-core GEMM: mma.sync m16n8k16 (fp16 or bf16 operands, fp32
// accumulation), ldmatrix, a kStages-deep cp.async pipeline through swizzled
// shared memory, fused epilogue, optional split-K. Runs on sm_80 and later.
//
// Spec (kernels_src/common/args.cuh) fields used beyond the common ones:
//   kBlockM x kBlockN x kBlockK  block tile, powers of two: M, N multiples of
//                                16 * warps, K 32..128
//   kWarpsM x kWarpsN            warp grid; kThreads == 32 * kWarpsM * kWarpsN
//   kStages                      pipeline depth (>= 2)
//   kSplitK                      K split over blockIdx.z (<= 16), reduced through
//                                the workspace (SplitK in epilogue.cuh)
// Launch: grid (ceil(N / kBlockN), ceil(M / kBlockM), batch * kSplitK),
// block kThreads, dynamic shared memory Mainloop<S>::kSmemBytes.
//
// Gated problems (GateOf<S>, gate.cuh): a tile of kBlockN columns of B
// covers kBlockN / 2 columns of D; the grid's x counts those.
//
// Any M, N, K >= 1, any layout of A / B / C / D, any alignment: 16-byte
// cp.async where rows are 16-byte aligned, 8- / 4-byte cp.async or 2-byte
// loads otherwise; partial chunks at matrix edges are read element-wise.
// kM == 0 takes M from args.m (<= the M the grid was sized for).
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/ptx_sm80.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm80/epilogue.cuh"
#include "jitgemm/sm80/gate.cuh"
#include "jitgemm/sm80/mainloop.cuh"

namespace jitgemm {
namespace sm80 {

// Tiles of M are visited in groups of this many, so that blocks running at
// the same time share A and B tiles in L2.
constexpr int kGroupM = 8;

template <class S>
__global__ void __launch_bounds__(S::kThreads) GemmMma(const GemmArgs args) {
  using ML = Mainloop<S>;
  using T = typename S::ElementA;
  static_assert(IsSame<T, typename S::ElementB>::value, "A and B must have one type");
  static_assert(IsSame<T, half_t>::value || IsSame<T, bfloat16_t>::value,
                "sm80 family: fp16 or bf16 operands");
  static_assert(S::kSplitK >= 1, "kSplitK >= 1");
  constexpr int kMI = ML::kMI, kNI = ML::kNI;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  const unsigned smem = SmemAddrAsm(smem_raw);

  const int m_total = S::kM != 0 ? S::kM : args.m;
  const int tiles_n = gridDim.x, tiles_m = gridDim.y;
  int tm = blockIdx.y, tn = blockIdx.x;
  if (tiles_m > kGroupM) {
    const int pid = blockIdx.y * tiles_n + blockIdx.x;
    const int per_group = kGroupM * tiles_n;
    const int group = pid / per_group;
    const int first = group * kGroupM;
    const int size = tiles_m - first < kGroupM ? tiles_m - first : kGroupM;
    const int r = pid - group * per_group;
    tm = first + r % size;
    tn = r / size;
  }
  const int m0 = tm * ML::kBM, n0 = tn * ML::kOutBN;
  if (S::kM == 0 && m0 >= m_total) return;  // run-time M below the grid's

  const int batch = S::kSplitK > 1 ? blockIdx.z / S::kSplitK : blockIdx.z;
  const int split = S::kSplitK > 1 ? blockIdx.z % S::kSplitK : 0;
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int wm0 = (warp / S::kWarpsN) * ML::kWM;
  const int wn0 = (warp % S::kWarpsN) * ML::kWN;

  constexpr int kPer = (ML::kKTiles + S::kSplitK - 1) / S::kSplitK;
  int kt_begin = 0, kt_count = ML::kKTiles;
  if (S::kSplitK > 1) {
    kt_begin = split * kPer;
    kt_count = ML::kKTiles - kt_begin < kPer ? ML::kKTiles - kt_begin : kPer;
    if (kt_count < 0) kt_count = 0;
  }

  if (S::kPdl) GridDependencyWait();

  const T* a = static_cast<const T*>(args.a) + static_cast<int64>(batch) * S::kStrideA;
  const T* b = static_cast<const T*>(args.b) + static_cast<int64>(batch) * S::kStrideB;

  float acc[kMI][kNI][4];
  ML::Run(acc, smem, a, b, m0, n0, m_total, kt_begin, kt_count, wm0, wn0, tid);

  if (S::kPdl) LaunchDependents();

  if (S::kSplitK > 1) {
    const long long tiles = static_cast<long long>(S::kBatch) * tiles_m * tiles_n;
    const long long tile = (static_cast<long long>(batch) * tiles_m + tm) * tiles_n + tn;
    if (!SplitK<S, kMI, kNI>::Reduce(args, acc, tile, tiles, split, tid)) return;
  }
  if constexpr (ML::kGated) {
    GatedEpilogue<S, kMI, kNI>::Store(args, acc, batch, m0 + wm0, n0 + wn0 / 2, m_total, tid & 31);
  } else {
    Epilogue<S, kMI, kNI>::Store(args, acc, batch, m0 + wm0, n0 + wn0, m_total, tid & 31);
  }
}

}  // namespace sm80
}  // namespace jitgemm
