// The sm90 family's tensor maps as the driver is asked for them, through a
// driver table whose encode records its arguments (no GPU needed): boxes,
// strides, swizzles, the tail boxes and the L2 promotion by line alignment.
#include "jit/tensor_maps.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jitgemm/problem.h"
#include "support/status_matchers.h"
#include "tests/jit/sm90_config.h"

namespace jitgemm::jit {
namespace {

using ::jitgemm::support::StatusIs;
using ::testing::HasSubstr;

#define ASSERT_ENCODES(expr)              \
  do {                                    \
    const absl::Status status_ = (expr);  \
    ASSERT_TRUE(status_.ok()) << status_; \
  } while (0)

struct Encoded {
  uint64_t dims[3];
  uint64_t strides[2];
  uint32_t box[3];
  CUtensorMapSwizzle swizzle;
  CUtensorMapL2promotion promotion;
};

std::vector<Encoded>& Calls() {
  static std::vector<Encoded> calls;
  return calls;
}
CUresult fail_with = CUDA_SUCCESS;

CUresult FakeEncode(CUtensorMap*, CUtensorMapDataType, cuuint32_t rank, void*,
                    const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                    const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle swizzle,
                    CUtensorMapL2promotion promotion, CUtensorMapFloatOOBfill) {
  EXPECT_EQ(rank, 3u);
  Calls().push_back({{dims[0], dims[1], dims[2]},
                     {strides[0], strides[1]},
                     {box[0], box[1], box[2]},
                     swizzle,
                     promotion});
  return fail_with;
}

CUresult FakeErrorString(CUresult, const char** msg) {
  *msg = "misaligned address";
  return CUDA_SUCCESS;
}

class TensorMapsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Calls().clear();
    fail_with = CUDA_SUCCESS;
    api_.cuTensorMapEncodeTiled = &FakeEncode;
    api_.cuGetErrorString = &FakeErrorString;
  }

  // bf16 D = A B, A row-major M x K, B column-major (K-major), D row-major.
  static GemmProblem Linear(int64_t m, int64_t n, int64_t k) {
    GemmProblem p = MakeGemm(m, n, k, DataType::kBF16);
    p.b.layout = Layout::kColMajor;
    return Canonicalize(p);
  }

  absl::Status Encode(const GemmProblem& p, const KernelConfig& c, uintptr_t a = 1 << 20,
                      uintptr_t b = 2 << 20, uintptr_t d = 3 << 20) {
    return EncodeSm90TensorMaps(api_, p, c, reinterpret_cast<const void*>(a),
                                reinterpret_cast<const void*>(b), reinterpret_cast<const void*>(d),
                                &maps_);
  }

  DriverApi api_{};
  Sm90TensorMaps maps_;
};

TEST_F(TensorMapsTest, WholeTilesEncodeABAndDWithTileDeepBoxes) {
  ASSERT_ENCODES(Encode(Linear(256, 512, 1024), Sm90Config(128, 256, 2, 4, 1)));
  ASSERT_EQ(Calls().size(), 3u);  // A, B, D: no tail boxes
  const Encoded& a = Calls()[0];
  EXPECT_EQ(a.dims[0], 1024u);  // K contiguous
  EXPECT_EQ(a.dims[1], 256u);
  EXPECT_EQ(a.strides[0], 1024u * 2);
  EXPECT_EQ(a.box[0], 64u);   // 128 bytes of bf16
  EXPECT_EQ(a.box[1], 128u);  // the tile's rows
  EXPECT_EQ(Calls()[1].box[1], 256u);
  EXPECT_EQ(Calls()[2].box[1], 64u);  // D in 64-row boxes
  for (const Encoded& e : Calls()) EXPECT_EQ(e.promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
}

TEST_F(TensorMapsTest, TilesPastMOrNGetBoxesAsDeepAsTheRowsLeft) {
  ASSERT_ENCODES(Encode(Linear(200, 520, 1024), Sm90Config(64, 128, 1, 4, 1)));
  ASSERT_EQ(Calls().size(), 5u);     // A, B, A tail, B tail, D
  EXPECT_EQ(Calls()[2].box[1], 8u);  // 200 % 64 = 8 rows
  EXPECT_EQ(Calls()[3].box[1], 8u);  // 520 % 128 = 8 columns
  // Clusters share B, so B keeps its box; A's tail does not depend on it.
  Calls().clear();
  ASSERT_ENCODES(Encode(Linear(200, 520, 1024), Sm90Config(64, 128, 1, 4, 2)));
  ASSERT_EQ(Calls().size(), 4u);
  EXPECT_EQ(Calls()[1].box[1], 64u);  // each CTA of the pair loads half of B
  EXPECT_EQ(Calls()[2].box[1], 8u);
}

TEST_F(TensorMapsTest, MOrNMajorOperandsArriveIn64By64BlocksAndGatedBInHalves) {
  GemmProblem p = MakeGemm(200, 520, 1024, DataType::kBF16);
  p.a.layout = Layout::kColMajor;  // M-major
  p = Canonicalize(p);             // B row-major: N-major
  ASSERT_ENCODES(Encode(p, Sm90Config(64, 128, 1, 4, 1)));
  ASSERT_EQ(Calls().size(), 3u);        // A, B, D: M-/N-major operands get no tail boxes
  EXPECT_EQ(Calls()[0].dims[0], 200u);  // M contiguous
  EXPECT_EQ(Calls()[0].dims[1], 1024u);
  EXPECT_EQ(Calls()[0].box[1], 64u);
  EXPECT_EQ(Calls()[1].dims[0], 520u);  // N contiguous
  EXPECT_EQ(Calls()[1].box[1], 64u);
  // A gated B of 2N columns, K-major: one box per half of the tile.
  Calls().clear();
  GemmProblem gated = Linear(256, 512, 1024);
  gated.epilogue.gate = Gate::kHalves;
  ASSERT_ENCODES(Encode(gated, Sm90Config(128, 256, 2, 4, 1)));
  EXPECT_EQ(Calls()[1].dims[1], 1024u);  // 2N rows of the K-major B
  EXPECT_EQ(Calls()[1].box[1], 128u);
  for (const Encoded& e : Calls()) EXPECT_EQ(e.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
}

TEST_F(TensorMapsTest, NMajorTilesNotMadeOf64ColumnBlocksArriveIn32ColumnBoxes) {
  // 160 columns: five 32-column boxes of 64-byte rows, 64-byte swizzled.
  const GemmProblem p = Canonicalize(MakeGemm(1024, 1000, 512, DataType::kBF16));
  ASSERT_ENCODES(Encode(p, Sm90Config(128, 160, 2, 4, 1)));
  ASSERT_EQ(Calls().size(), 3u);
  EXPECT_EQ(Calls()[1].dims[0], 1000u);  // N contiguous
  EXPECT_EQ(Calls()[1].box[0], 32u);
  EXPECT_EQ(Calls()[1].box[1], 64u);  // k rows
  EXPECT_EQ(Calls()[1].swizzle, CU_TENSOR_MAP_SWIZZLE_64B);
  EXPECT_EQ(Calls()[0].swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  // A gated tile of 192 columns: halves of 96, three 32-column boxes each.
  Calls().clear();
  GemmProblem gated = MakeGemm(1024, 1000, 512, DataType::kBF16);
  gated.epilogue.gate = Gate::kHalves;
  gated = Canonicalize(gated);
  ASSERT_ENCODES(Encode(gated, Sm90Config(128, 192, 2, 4, 1)));
  EXPECT_EQ(Calls()[1].dims[0], 2000u);  // 2N columns
  EXPECT_EQ(Calls()[1].box[0], 32u);
  EXPECT_EQ(Calls()[1].swizzle, CU_TENSOR_MAP_SWIZZLE_64B);
  // Whole 64-column blocks keep 128-byte boxes: 192 plain, 256 gated.
  for (const auto& [problem, bn] : {std::pair{p, 192}, std::pair{gated, 256}}) {
    Calls().clear();
    ASSERT_ENCODES(Encode(problem, Sm90Config(128, bn, 2, 4, 1)));
    EXPECT_EQ(Calls()[1].box[0], 64u) << bn;
    EXPECT_EQ(Calls()[1].swizzle, CU_TENSOR_MAP_SWIZZLE_128B) << bn;
  }
}

TEST_F(TensorMapsTest, LinesOff128BytesArePromotedTo128BytesOnly) {
  GemmProblem p = Linear(256, 512, 1024);
  p.a.ld = 1032;  // 2064-byte lines
  ASSERT_ENCODES(Encode(p, Sm90Config(128, 256, 2, 4, 1)));
  ASSERT_EQ(Calls().size(), 3u);
  EXPECT_EQ(Calls()[0].strides[0], 1032u * 2);
  EXPECT_EQ(Calls()[0].promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  EXPECT_EQ(Calls()[1].promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  // A pointer 16 bytes off a line puts every line off one.
  Calls().clear();
  ASSERT_ENCODES(Encode(Linear(256, 512, 1024), Sm90Config(128, 256, 2, 4, 1), (1 << 20) + 16));
  EXPECT_EQ(Calls()[0].promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  EXPECT_EQ(Calls()[1].promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  // So do matrices of a batch that start off a line.
  Calls().clear();
  GemmProblem batched = Linear(256, 512, 1024);
  batched.batch_count = 3;
  batched.a.batch_stride = 256 * 1024 + 8;
  batched.b.batch_stride = 512 * 1024;
  batched.d.batch_stride = 256 * 512;
  ASSERT_ENCODES(Encode(batched, Sm90Config(128, 256, 2, 4, 1)));
  EXPECT_EQ(Calls()[0].dims[2], 3u);
  EXPECT_EQ(Calls()[0].promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  EXPECT_EQ(Calls()[1].promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
}

TEST_F(TensorMapsTest, ARefusedMapIsAnErrorNamingTheOperand) {
  fail_with = CUDA_ERROR_INVALID_VALUE;
  EXPECT_THAT(
      Encode(Linear(256, 512, 1024), Sm90Config(128, 256, 2, 4, 1)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("TMA descriptor of A refused by the driver (misaligned address)")));
}

}  // namespace
}  // namespace jitgemm::jit
