// The gate pass of a gated problem's cuBLAS route (jit/families/gate.h):
// cuBLASLt wrote the product of A with B = [B_gate | B_up] into the
// workspace W (M x 2N per batch, D's type and storage order, packed), and
//
//   D[b][i][j] = act(W[b][i][j] + bias[j]) * (W[b][i][N + j] + bias[N + j])
//
// is computed in fp32 and stored in D's type, layout, ld and batch stride.
// The bias is there only when cuBLASLt's BIAS epilogue could not add it.
// W arrives as args.c (the product the epilogue reads); the spec adds
//
//   static constexpr jitgemm::int64 kLdw, kStrideW, kUpOffset;  // elements
//   static constexpr int kAlignW;  // bytes every line start of both halves is aligned to
//
// The walk is bias_activation.cuh's: D's lines (rows of row-major D,
// columns otherwise) in chunks of S::kBlockN elements, one chunk per thread
// and step of a grid-stride loop; a chunk is one vector access of D and one
// of each half of W (16 bytes where D's lines, W's halves and the pointer
// allow), a line's short last chunk scalar. 16-bit D takes the approximate
// activations of jitgemm/sm90/activation.cuh, as the sm90 family's own gated
// epilogue does: their error is below the rounding of D.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/types.cuh"
#include "jitgemm/epilogue/bias_activation.cuh"
#include "jitgemm/sm90/activation.cuh"

namespace jitgemm {
namespace epilogue {

template <class S>
struct GateTraits {
  using T = typename S::ElementD;
  static constexpr int kVec = S::kBlockN;  // elements per chunk
  static constexpr int kBytes = kVec * static_cast<int>(sizeof(T));
  static_assert(kVec == 1 || (kBytes >= 4 && kBytes <= 16 && (kBytes & (kBytes - 1)) == 0),
                "a chunk is one 4, 8 or 16-byte access");
  static_assert(kVec == 1 || kBytes <= S::kAlignD,
                "the chunk is wider than the alignment D's pointer, ld and batch stride promise");
  static_assert(kVec == 1 || kBytes <= S::kAlignW,
                "the chunk is wider than the alignment of the halves of the product");
  static constexpr int64 kInner = S::kRowD ? S::kN : S::kM;  // line length
  static constexpr int64 kOuter = S::kRowD ? S::kM : S::kN;  // lines per batch
  static constexpr int64 kChunks = (kInner + kVec - 1) / kVec;
  static constexpr int64 kWork = kChunks * kOuter * S::kBatch;
  static constexpr bool kTail = kInner % kVec != 0;
  // The bias has one entry per column of B (2N): along the line with
  // row-major D, one gate and one up value per line otherwise.
  static constexpr bool kBiasAlong = S::kBias == 1 && S::kRowD;
  static constexpr bool kBiasVector = kBiasAlong && kVec > 1 && S::kAlignBias >= kBytes &&
                                      (S::kN * static_cast<int64>(sizeof(T))) % kBytes == 0;
};

template <class T, int kAct>
__device__ __forceinline__ float GateActivate(float x) {
  if constexpr (sizeof(T) == 2) {
    return sm90::ActivateFor16BitD<kAct>(x);
  } else {
    return ActivateFor<float, kAct>(x);
  }
}

// One whole chunk: kVec gate elements at w, their up partners at
// w + kUpOffset, the result to d.
template <class S>
__device__ __forceinline__ void GateVectorChunk(const typename S::ElementD* w,
                                                typename S::ElementD* d,
                                                const typename S::ElementD* bias) {
  using Tr = GateTraits<S>;
  using T = typename Tr::T;
  using C = Chunk<Tr::kBytes>;
  constexpr int kVec = Tr::kVec;
  const C gate = *reinterpret_cast<const C*>(w);
  const C up = *reinterpret_cast<const C*>(w + S::kUpOffset);
  float g[kVec], u[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    g[e] = ChunkElement<T>(gate, e);
    u[e] = ChunkElement<T>(up, e);
  }
  if constexpr (Tr::kBiasVector) {
    const C bg = *reinterpret_cast<const C*>(bias);
    const C bu = *reinterpret_cast<const C*>(bias + S::kN);
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      g[e] += ChunkElement<T>(bg, e);
      u[e] += ChunkElement<T>(bu, e);
    }
  } else if constexpr (Tr::kBiasAlong) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      g[e] += ToFloat(bias[e]);
      u[e] += ToFloat(bias[S::kN + e]);
    }
  } else if constexpr (S::kBias != 0) {
    const float bg = ToFloat(bias[0]), bu = ToFloat(bias[S::kN]);
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      g[e] += bg;
      u[e] += bu;
    }
  }
  float v[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) v[e] = GateActivate<T, S::kAct>(g[e]) * u[e];
  C out;
#pragma unroll
  for (int i = 0; i < Tr::kBytes / 4; ++i) out.w[i] = ChunkWord<T>(v, i);
  *reinterpret_cast<C*>(d) = out;
}

// `count` elements, one access each.
template <class S>
__device__ __forceinline__ void GateScalarChunk(const typename S::ElementD* w,
                                                typename S::ElementD* d,
                                                const typename S::ElementD* bias, int count) {
  using Tr = GateTraits<S>;
  using T = typename Tr::T;
  for (int e = 0; e < count; ++e) {
    float g = ToFloat(w[e]);
    float u = ToFloat(w[S::kUpOffset + e]);
    if (S::kBias != 0) {
      const int at = Tr::kBiasAlong ? e : 0;
      g += ToFloat(bias[at]);
      u += ToFloat(bias[S::kN + at]);
    }
    d[e] = FromFloat<T>(GateActivate<T, S::kAct>(g) * u);
  }
}

template <class S>
__global__ void __launch_bounds__(S::kThreads) GateActivation(const GemmArgs args) {
  using Tr = GateTraits<S>;
  using T = typename Tr::T;
  using Index = typename WorkIndex<(Tr::kWork > (1ll << 31))>::Type;
  constexpr int kVec = Tr::kVec;
  if (S::kPdl) GridDependencyWait();
  const Index stride = static_cast<Index>(gridDim.x) * S::kThreads;
  for (Index item = static_cast<Index>(blockIdx.x) * S::kThreads + threadIdx.x;
       item < static_cast<Index>(Tr::kWork); item += stride) {
    const Index chunk = item % static_cast<Index>(Tr::kChunks);
    const Index lines = item / static_cast<Index>(Tr::kChunks);
    const Index line = lines % static_cast<Index>(Tr::kOuter);
    const Index batch = S::kBatch > 1 ? lines / static_cast<Index>(Tr::kOuter) : 0;
    const int64 inner = static_cast<int64>(chunk) * kVec;
    T* d = static_cast<T*>(args.d) + static_cast<int64>(batch) * S::kStrideD +
           static_cast<int64>(line) * S::kLdd + inner;
    const T* w = static_cast<const T*>(args.c) + static_cast<int64>(batch) * S::kStrideW +
                 static_cast<int64>(line) * S::kLdw + inner;
    const T* bias = nullptr;
    if (S::kBias != 0) {
      bias = static_cast<const T*>(args.bias) + static_cast<int64>(batch) * S::kStrideBias +
             (Tr::kBiasAlong ? inner : static_cast<int64>(line));
    }
    const bool whole = !Tr::kTail || chunk + 1 < static_cast<Index>(Tr::kChunks);
    if constexpr (kVec > 1) {
      if (whole) {
        GateVectorChunk<S>(w, d, bias);
        continue;
      }
    }
    GateScalarChunk<S>(w, d, bias, whole ? kVec : static_cast<int>(Tr::kInner - inner));
  }
}

}  // namespace epilogue
}  // namespace jitgemm
