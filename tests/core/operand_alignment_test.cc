// The alignment of an operand's lines: its pointer's, lowered by its leading
// dimension and batch stride where it has more than one line or batch.
#include "core/operand_alignment.h"

#include "gtest/gtest.h"
#include "jitgemm/problem.h"

namespace jitgemm {
namespace {

TEST(OperandAlignmentTest, FollowsPointerLdAndStride) {
  Operand op{DataType::kBF16, Layout::kRowMajor, 4096, kNoStride};
  EXPECT_EQ(OperandAlignment(op, 8, 4096, 1, 16), 16);
  EXPECT_EQ(OperandAlignment(op, 8, 4096, 1, 4), 4);
  op.ld = 4097;  // odd row length: rows start 2-byte aligned
  EXPECT_EQ(OperandAlignment(op, 8, 4097, 1, 16), 2);
  EXPECT_EQ(OperandAlignment(op, 1, 4097, 1, 16), 16);  // one row: ld never used
  op.ld = 4096;
  op.batch_stride = 4100;
  EXPECT_EQ(OperandAlignment(op, 8, 4096, 3, 16), 8);
  EXPECT_EQ(OperandAlignment(op, 8, 4096, 1, 16), 16);  // one batch: stride never used
}

TEST(OperandAlignmentTest, ColumnMajorLinesAreColumns) {
  Operand op{DataType::kF16, Layout::kColMajor, 4099, kNoStride};
  EXPECT_EQ(OperandAlignment(op, 4096, 8, 1, 16), 2);
  EXPECT_EQ(OperandAlignment(op, 4096, 1, 1, 16), 16);
}

// A buffer of cudaMalloc (256 bytes) keeps its alignment up to what the
// strides allow: the bench's cuBLASLt baseline is told as much.
TEST(OperandAlignmentTest, KeepsAlignmentsAbove16) {
  Operand op{DataType::kF32, Layout::kRowMajor, 1024, kNoStride};
  EXPECT_EQ(OperandAlignment(op, 8, 1024, 1, 256), 256);
  op.ld = 1000;  // 4000 bytes
  EXPECT_EQ(OperandAlignment(op, 8, 1000, 1, 256), 32);
}

TEST(OperandAlignmentTest, BiasFollowsItsBatchStride) {
  GemmProblem p = MakeGemm(64, 100, 32, DataType::kBF16);
  p.epilogue.bias = BiasMode::kPerColumn;
  EXPECT_EQ(BiasAlignment(p, 16), 16);
  p.batch_count = 3;
  p.epilogue.bias_batch_stride = 100;  // 200 bytes
  EXPECT_EQ(BiasAlignment(p, 16), 8);
  p.epilogue.bias_batch_stride = 0;  // one vector for every batch
  EXPECT_EQ(BiasAlignment(p, 16), 16);
}

TEST(OperandAlignmentTest, LargestPow2DivisorStopsAtTheCap) {
  EXPECT_EQ(LargestPow2Divisor(8198, 16), 2);
  EXPECT_EQ(LargestPow2Divisor(4096, 16), 16);
  EXPECT_EQ(LargestPow2Divisor(4096, 256), 256);
  EXPECT_EQ(LargestPow2Divisor(7, 16), 1);
}

}  // namespace
}  // namespace jitgemm
