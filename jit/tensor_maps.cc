#include "jit/tensor_maps.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "jit/families/sm90.h"

namespace jitgemm::jit {
namespace {

// Lines of a box of an M- or N-major operand and of D: 64.
constexpr uint32_t kBox = 64;

struct MapShape {
  uint64_t contiguous;           // elements along the contiguous dimension
  uint64_t strided;              // lines
  uint32_t box_lines;            // lines per box
  uint32_t box_row_bytes = 128;  // the span of the swizzle: 128 or 64
};

// Whether every line of the operand starts on a 128-byte boundary. Lines that
// do not make each 128-byte box row straddle two, and promoting those reads
// to 256 bytes cost the kernels 8-12% more than promoting them to 128
// (docs/kernels.md, "Rows off 128-byte lines").
bool OnLines(uint64_t line_bytes, const void* base, uint64_t batch_stride_bytes) {
  return line_bytes % 128 == 0 && reinterpret_cast<uintptr_t>(base) % 128 == 0 &&
         batch_stride_bytes % 128 == 0;
}

absl::Status Encode(const DriverApi& api, const Operand& op, int64_t batch_count,
                    const MapShape& shape, const void* base, CUtensorMap* map, const char* name) {
  const uint64_t esize = static_cast<uint64_t>(DataTypeSize(op.type));
  const int64_t stride = op.batch_stride == kNoStride ? 0 : op.batch_stride;
  const uint64_t batches = batch_count > 1 && stride != 0 ? static_cast<uint64_t>(batch_count) : 1;
  cuuint64_t dims[3] = {shape.contiguous, shape.strided, batches};
  // A stride over a dimension of one line or one matrix is never used, but
  // the driver still wants a multiple of 16: the leading dimension of a
  // single line need not be one (validation accepts any ld there).
  const cuuint64_t line = static_cast<cuuint64_t>(op.ld) * esize;
  const cuuint64_t line_stride = shape.strided > 1 ? line : (line + 15) / 16 * 16;
  cuuint64_t strides[2] = {line_stride,
                           batches > 1 ? static_cast<cuuint64_t>(stride) * esize : line_stride};
  // Every box row spans the swizzle.
  cuuint32_t box[3] = {static_cast<cuuint32_t>(shape.box_row_bytes / esize), shape.box_lines, 1};
  cuuint32_t element_strides[3] = {1, 1, 1};
  const CUtensorMapDataType type = op.type == DataType::kBF16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                   : op.type == DataType::kF32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                                               : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = api.cuTensorMapEncodeTiled(
      map, type, 3, const_cast<void*>(base), dims, strides, box, element_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE,
      shape.box_row_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
      OnLines(line, base, batches > 1 ? static_cast<uint64_t>(stride) * esize : 0)
          ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
          : CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    const char* msg = "unknown error";
    api.cuGetErrorString(r, &msg);
    return absl::InvalidArgumentError(absl::StrCat("TMA descriptor of ", name,
                                                   " refused by the driver (", msg,
                                                   "): its pointer must be 16-byte aligned"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status EncodeSm90TensorMaps(const DriverApi& api, const GemmProblem& p, const KernelConfig& c,
                                  const void* a, const void* b, const void* d,
                                  Sm90TensorMaps* maps) {
  const uint64_t m = static_cast<uint64_t>(p.m), n = static_cast<uint64_t>(p.n),
                 k = static_cast<uint64_t>(p.k);
  // K-major operands arrive as one box of 64 k x tile lines; M-/N-major ones
  // as column blocks of 64 k, 128 or 64 bytes wide. With clusters each CTA
  // loads its share of B.
  const MapShape shape_a = p.a.layout == Layout::kRowMajor
                               ? MapShape{k, m, static_cast<uint32_t>(c.block_m)}
                               : MapShape{m, k, kBox};
  // A gated B has 2N columns, and each CTA loads whole halves of its tile.
  const uint64_t b_cols = static_cast<uint64_t>(BColumns(p));
  const bool gated = p.epilogue.gate != Gate::kNone;
  const int b_box = gated ? c.block_n / 2 : c.block_n / c.cluster_m;
  const MapShape shape_b =
      p.b.layout == Layout::kColMajor
          ? MapShape{k, b_cols, static_cast<uint32_t>(b_box)}
          : MapShape{b_cols, k, kBox, static_cast<uint32_t>(Sm90NMajorBBoxRowBytes(p, c))};
  absl::Status s = Encode(api, p.a, p.batch_count, shape_a, a, &maps->a, "A");
  if (s.ok()) s = Encode(api, p.b, p.batch_count, shape_b, b, &maps->b, "B");
  // The last tile's boxes, as kernels_src/sm90/mainloop.cuh expects (kATail,
  // kBTail): only as deep as the rows left, in 8-row swizzle atoms.
  auto tail_rows = [](int64_t extent, int tile) {
    return static_cast<uint32_t>((extent % tile + 7) / 8 * 8);
  };
  maps->a_tail = maps->a;
  maps->b_tail = maps->b;
  if (s.ok() && p.a.layout == Layout::kRowMajor && p.m % c.block_m != 0) {
    s = Encode(api, p.a, p.batch_count, MapShape{k, m, tail_rows(p.m, c.block_m)}, a, &maps->a_tail,
               "A");
  }
  if (s.ok() && p.b.layout == Layout::kColMajor && !gated && c.cluster_m == 1 &&
      p.n % c.block_n != 0) {
    s = Encode(api, p.b, p.batch_count, MapShape{k, b_cols, tail_rows(p.n, c.block_n)}, b,
               &maps->b_tail, "B");
  }
  if (s.ok() && Sm90TmaStore(p, c)) {
    s = Encode(api, p.d, p.batch_count, MapShape{n, m, kBox}, d, &maps->d, "D");
  }
  return s;
}

}  // namespace jitgemm::jit
