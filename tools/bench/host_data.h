// Host-side data for jitgemm-bench: random matrices in the exact values their
// device element type can hold, and the index arithmetic of a GemmProblem operand.
//
// Thread safety: plain functions and value types.
#ifndef JITGEMM_TOOLS_BENCH_HOST_DATA_H_
#define JITGEMM_TOOLS_BENCH_HOST_DATA_H_

#include <cstdint>
#include <vector>

#include "jitgemm/problem.h"

namespace jitgemm::bench {

// f16 / bf16 conversions: core/host_types.h (FloatToHalf, FloatToBf16, ...);
// element sizes: DataTypeSize.

// Element (r, c) of batch `batch` of an operand, in elements from its base.
inline int64_t ElementIndex(const Operand& op, int64_t batch, int64_t r, int64_t c) {
  const int64_t stride = op.batch_stride == kNoStride ? 0 : op.batch_stride;
  return batch * stride + (op.layout == Layout::kRowMajor ? r * op.ld + c : r + c * op.ld);
}

// Elements a buffer needs to hold `batches` matrices of rows x cols.
int64_t BufferElements(const Operand& op, int64_t batches, int64_t rows, int64_t cols);

// A host matrix buffer: `values` are exactly what `bytes` encode in `type`.
struct HostBuffer {
  DataType type = DataType::kF32;
  std::vector<float> values;
  std::vector<unsigned char> bytes;
};

// `count` values uniform in [-1, 1), rounded to `type`; never all zero.
HostBuffer RandomBuffer(DataType type, int64_t count, uint64_t seed);

// Decodes `count` elements of `type` from raw device bytes.
std::vector<float> DecodeElements(DataType type, const void* bytes, int64_t count);

}  // namespace jitgemm::bench

#endif  // JITGEMM_TOOLS_BENCH_HOST_DATA_H_
