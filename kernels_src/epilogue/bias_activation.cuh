// The epilogue alone, for a product cuBLAS already wrote into D:
//   D[b][i][j] = act(D[b][i][j] + bias[b][i or j])
// in place, in fp32, stored in D's type.
//
// D is walked along its contiguous dimension (a "line": a row when D is
// row-major, a column otherwise) in chunks of S::kBlockN elements, one chunk
// per thread and step of a grid-stride loop over (batch, line, chunk). With
// kBlockN > 1 a chunk is one vector load and one vector store (16 bytes when
// the host could promise it: 8 half/bf16 or 4 floats); the host picks kBlockN
// so that every line start is aligned to the vector (kAlignD), and a line's
// last chunk, where the line length is no multiple of kBlockN, falls back to
// scalar accesses. kBlockN == 1 is the scalar kernel for any layout. A bias
// along the line is read with the same vectors when its alignment allows; a
// bias across lines is one scalar per chunk.
//
// Why vectors: the pass is purely memory bound, and one thread per 2-byte
// element left it below the bandwidth PyTorch's elementwise kernels reach.
#pragma once

#include "jitgemm/common/args.cuh"
#include "jitgemm/common/epilogue.cuh"
#include "jitgemm/common/types.cuh"

namespace jitgemm {
namespace epilogue {

// kBytes bytes of D, loaded and stored as one access.
template <int kBytes>
struct alignas(kBytes) Chunk {
  unsigned w[kBytes / 4];
};

// Element e of a chunk of T, as float.
template <class T, int kBytes>
__device__ __forceinline__ float ChunkElement(const Chunk<kBytes>& c, int e) {
  if constexpr (sizeof(T) == 4) {
    return __uint_as_float(c.w[e]);
  } else {
    T t;
    t.bits = static_cast<unsigned short>((e & 1) ? c.w[e >> 1] >> 16 : c.w[e >> 1] & 0xffffu);
    return ToFloat(t);
  }
}

// Elements 2i and 2i + 1 (or i, for floats) of v, packed into word i of a chunk of T.
template <class T>
__device__ __forceinline__ unsigned ChunkWord(const float* v, int i) {
  if constexpr (sizeof(T) == 4) {
    return __float_as_uint(v[i]);
  } else {
    return Pack2<T>(v[2 * i], v[2 * i + 1]);
  }
}

template <class S>
struct BiasActivationTraits {
  using T = typename S::ElementD;
  static constexpr int kVec = S::kBlockN;  // elements per chunk
  static constexpr int kBytes = kVec * static_cast<int>(sizeof(T));
  static_assert(kVec == 1 || (kBytes >= 4 && kBytes <= 16 && (kBytes & (kBytes - 1)) == 0),
                "a chunk is one 4, 8 or 16-byte access");
  static_assert(kVec == 1 || kBytes <= S::kAlignD,
                "the chunk is wider than the alignment D's pointer, ld and batch stride promise");
  static constexpr int64 kInner = S::kRowD ? S::kN : S::kM;  // line length
  static constexpr int64 kOuter = S::kRowD ? S::kM : S::kN;  // lines per batch
  static constexpr int64 kChunks = (kInner + kVec - 1) / kVec;
  static constexpr int64 kWork = kChunks * kOuter * S::kBatch;
  static constexpr bool kTail = kInner % kVec != 0;
  // The bias runs along the line: per column with row-major D, or per row
  // with column-major D.
  static constexpr bool kBiasAlong = S::kBias != 0 && ((S::kBias == 1) == S::kRowD);
  static constexpr bool kBiasVector = kBiasAlong && kVec > 1 && S::kAlignBias >= kBytes;
};

// 32-bit indices wherever the work fits, so the loop's divisions by constants
// stay cheap multiplications.
template <bool kWide>
struct WorkIndex {
  using Type = unsigned;
};
template <>
struct WorkIndex<true> {
  using Type = unsigned long long;
};

// One whole chunk of kVec elements at d (and its bias), by vector accesses.
template <class S>
__device__ __forceinline__ void VectorChunk(typename S::ElementD* d,
                                            const typename S::ElementD* bias) {
  using Tr = BiasActivationTraits<S>;
  using T = typename Tr::T;
  constexpr int kVec = Tr::kVec;
  const Chunk<Tr::kBytes> in = *reinterpret_cast<const Chunk<Tr::kBytes>*>(d);
  float v[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) v[e] = ChunkElement<T>(in, e);
  if constexpr (Tr::kBiasVector) {
    const Chunk<Tr::kBytes> b = *reinterpret_cast<const Chunk<Tr::kBytes>*>(bias);
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] += ChunkElement<T>(b, e);
  } else if constexpr (Tr::kBiasAlong) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] += ToFloat(bias[e]);
  } else if constexpr (S::kBias != 0) {
    const float b = ToFloat(*bias);
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] += b;
  }
  Chunk<Tr::kBytes> out;
#pragma unroll
  for (int e = 0; e < kVec; ++e) v[e] = ActivateFor<T, S::kAct>(v[e]);
#pragma unroll
  for (int i = 0; i < Tr::kBytes / 4; ++i) out.w[i] = ChunkWord<T>(v, i);
  *reinterpret_cast<Chunk<Tr::kBytes>*>(d) = out;
}

// `count` elements at d, one access each.
template <class S>
__device__ __forceinline__ void ScalarChunk(typename S::ElementD* d,
                                            const typename S::ElementD* bias, int count) {
  using Tr = BiasActivationTraits<S>;
  using T = typename Tr::T;
  for (int e = 0; e < count; ++e) {
    float v = ToFloat(d[e]);
    if (S::kBias != 0) v += ToFloat(bias[Tr::kBiasAlong ? e : 0]);
    d[e] = FromFloat<T>(ActivateFor<T, S::kAct>(v));
  }
}

template <class S>
__global__ void __launch_bounds__(S::kThreads) BiasActivation(const GemmArgs args) {
  using Tr = BiasActivationTraits<S>;
  using T = typename Tr::T;
  using Index = typename WorkIndex<(Tr::kWork > (1ll << 31))>::Type;
  constexpr int kVec = Tr::kVec;
  if (S::kPdl) GridDependencyWait();
  const Index stride = static_cast<Index>(gridDim.x) * S::kThreads;
  for (Index w = static_cast<Index>(blockIdx.x) * S::kThreads + threadIdx.x;
       w < static_cast<Index>(Tr::kWork); w += stride) {
    const Index chunk = w % static_cast<Index>(Tr::kChunks);
    const Index lines = w / static_cast<Index>(Tr::kChunks);
    const Index line = lines % static_cast<Index>(Tr::kOuter);
    const Index batch = S::kBatch > 1 ? lines / static_cast<Index>(Tr::kOuter) : 0;
    const int64 inner = static_cast<int64>(chunk) * kVec;
    T* d = static_cast<T*>(args.d) + static_cast<int64>(batch) * S::kStrideD +
           static_cast<int64>(line) * S::kLdd + inner;
    const T* bias = nullptr;
    if (S::kBias != 0) {
      bias = static_cast<const T*>(args.bias) + static_cast<int64>(batch) * S::kStrideBias +
             (Tr::kBiasAlong ? inner : static_cast<int64>(line));
    }
    const bool whole = !Tr::kTail || chunk + 1 < static_cast<Index>(Tr::kChunks);
    if constexpr (kVec > 1) {
      if (whole) {
        VectorChunk<S>(d, bias);
        continue;
      }
    }
    // The scalar kernel, or the short last chunk of a line.
    ScalarChunk<S>(d, bias, whole ? kVec : static_cast<int>(Tr::kInner - inner));
  }
}

}  // namespace epilogue
}  // namespace jitgemm
