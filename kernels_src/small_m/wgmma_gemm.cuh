// small_m's wgmma path (sm_90a, M > 16): x and W tiles through 128-byte
// swizzled shared memory into wgmma.m64nNk16 with N = 16 or 32.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/gate.cuh"
#include "jitgemm/common/ptx_sm80.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/sm90/ptx.cuh"
#include "jitgemm/sm90/wgmma_narrow.cuh"
#include "jitgemm/small_m/ptx.cuh"
#include "jitgemm/small_m/traits.cuh"

namespace jitgemm {
namespace small_m {

// The wgmma path (sm_90a, kBlockK = 64 * KS > 32): one warpgroup computes D
// tile (64 rows of x) x (kBlockN rows of W) with wgmma.m64nNk16, both operands
// from shared memory (K-major, 128-byte swizzle), x and W streamed by cp.async
// through kStages stages of KS 64-wide K atoms, one wgmma group in flight.
// Needs x rows and W rows 16-byte aligned (the host falls back to the
// register-ring path otherwise, with the same launch shape). Gated problems
// take W's rows as Traits::WRow interleaves them, so n8 blocks 2 jj and
// 2 jj + 1 of the accumulators are the gate and up values of one output
// column in the same thread.
template <class S>
struct WgOk {
  static constexpr bool value =
      S::kBlockK > 32 && S::kBlockK % 64 == 0 && S::kBlockM == 64 && S::kThreads == 128 &&
      (S::kBlockN == 16 || S::kBlockN == 32) && S::kSplitK == 1 && S::kStages >= 3 && S::kRowA &&
      !S::kRowB && (S::kLda * 2) % 16 == 0 &&
      (S::kLdb * 2) % 16 == 0 && S::kAlignA >= 16 && S::kAlignB >= 16 &&
      (S::kBatch == 1 || ((S::kStrideA * 2) % 16 == 0 && (S::kStrideB * 2) % 16 == 0));
};

template <class S>
__device__ __forceinline__ void WgGemm(const GemmArgs& args) {
#if __CUDA_ARCH__ >= 900
  constexpr int KS = S::kBlockK / 64, BN = S::kBlockN, ST = S::kStages;
  constexpr int kK = S::kK, kN = S::kN;
  constexpr int KB = (kK + S::kBlockK - 1) / S::kBlockK;
  constexpr int kAAtom = 64 * 128, kBAtom = BN * 128;
  constexpr int kATile = kAAtom * KS, kStage = (kAAtom + kBAtom) * KS;
  extern __shared__ U4 smem_dyn[];
  const unsigned base = (SmemAddr(smem_dyn) + 1023u) & ~1023u;
  const int tid = threadIdx.x;
  const int tile_n = blockIdx.x;
  using Tr = Traits<S>;
  const int batch = blockIdx.z;
  const int m_rt = S::kM != 0 ? S::kM : CMin(args.m, 64);
  const unsigned short* x =
      static_cast<const unsigned short*>(args.a) + static_cast<int64>(batch) * S::kStrideA;
  const unsigned short* w =
      static_cast<const unsigned short*>(args.b) + static_cast<int64>(batch) * S::kStrideB;

  // No L2 prefetch of the weights before the wait: with it, 2048 x 4096 ran
  // 13.7 us against 9.5 without (H100, kernel harness).
  if (S::kPdl) GridDependencyWait();
  // One 16-byte unit: zero-filled past M, N or K (src-size 0..16 bytes).
  // K a multiple of the stage depth: no K tail to test (the tests cost about
  // 1 us at 2048 x 4096, H100, the loads being on the critical path).
  constexpr bool kKFull = kK % S::kBlockK == 0;
  auto unit = [&](unsigned dst, const unsigned short* row, bool row_ok, int k) {
    const int left = kK - k;
    const unsigned bytes = kKFull               ? (row_ok ? 16u : 0u)
                           : row_ok && left > 0 ? (left >= 8 ? 16u : 2u * left)
                                                : 0u;
    const unsigned short* src = kKFull || bytes != 0u ? row + k : row;
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                 "r"(bytes)
                 : "memory");
  };
  auto load = [&](int kb) {
    const unsigned stage = base + (kb % ST) * kStage;
#pragma unroll
    for (int q = 0; q < KS; ++q) {
      const int k0 = (kb * KS + q) * 64;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int u = tid + i * 128, r = u >> 3, c = u & 7;
        unit(stage + q * kAAtom + r * 128 + ((c ^ (r & 7)) << 4),
             x + static_cast<int64>(r < m_rt ? r : 0) * S::kLda, r < m_rt, k0 + c * 8);
      }
#pragma unroll
      for (int i = 0; i < BN * 8 / 128; ++i) {
        const int u = tid + i * 128, r = u >> 3, c = u & 7;
        bool ok;
        const int n = Tr::WRow(tile_n, r, ok);
        unit(stage + kATile + q * kBAtom + r * 128 + ((c ^ (r & 7)) << 4),
             w + static_cast<int64>(ok ? n : 0) * S::kLdb, ok, k0 + c * 8);
      }
    }
  };
  // 128-byte swizzle, K-major: 8-row groups 1024 bytes apart.
  auto desc = [](unsigned addr) {
    return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) | (1ull << 16) |
           (static_cast<unsigned long long>(1024 >> 4) << 32) | (1ull << 62);
  };

  // Prefetch distance ST - 2: one wgmma group stays in flight, so the slot
  // refilled at iteration kb is that of kb - 2.
#pragma unroll
  for (int s = 0; s < ST - 2; ++s) {
    if (s < KB) load(s);
    CpAsyncCommit();
  }
  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
  for (int kb = 0; kb < KB; ++kb) {
    CpAsyncWait<ST - 3>();
    sm90::FenceProxyAsyncShared();
    __syncthreads();
    if (kb + ST - 2 < KB) load(kb + ST - 2);
    CpAsyncCommit();
    if (S::kPdl && kb + ST - 2 == KB - 1) LaunchDependents();
    sm90::WgmmaFence();
    const unsigned stage = base + (kb % ST) * kStage;
#pragma unroll
    for (int q = 0; q < KS; ++q) {
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const unsigned long long da = desc(stage + q * kAAtom + kk * 32);
        const unsigned long long db = desc(stage + kATile + q * kBAtom + kk * 32);
        const int scale = kb > 0 || q > 0 || kk > 0;
        sm90::WgmmaNarrow<typename S::ElementB, BN>(acc, da, db, scale);
      }
    }
    sm90::WgmmaCommit();
    sm90::WgmmaWait<1>();
  }
  sm90::WgmmaWait<0>();
  if (S::kPdl && KB < ST - 1) LaunchDependents();

  // Accumulators: warp w holds rows 16 w + g (+ 8), n8 block j columns 8 j + 2 t (+ 1).
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  if constexpr (Tr::kGated) {
    // Blocks 2 jj and 2 jj + 1 are the gate and up rows of the same outputs.
#pragma unroll
    for (int jj = 0; jj < BN / 16; ++jj) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int n = tile_n * Tr::kOutBN + 8 * jj + 2 * t + e;
        if (!Tr::kNFull && n >= kN) continue;
        const GateBias<S> bias(args, batch, n);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int m = 16 * warp + g + 8 * h;
          if (m >= m_rt) continue;
          StoreD<S>(
              args, batch, m, n,
              GatedValue<S>(args, acc[8 * jj + 2 * h + e], acc[8 * jj + 4 + 2 * h + e], bias));
        }
      }
    }
    return;
  }
  const int n0 = tile_n * BN;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = 16 * warp + g + 8 * h;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int n = n0 + 8 * j + 2 * t + e;
        if (m < m_rt && (S::kN % BN == 0 || n < kN)) {
          StoreD<S>(args, batch, m, n, EpilogueValue<S>(args, batch, m, n, acc[4 * j + 2 * h + e]));
        }
      }
    }
  }
#endif
}

}  // namespace small_m
}  // namespace jitgemm
