#include "api/src/pointer_check.h"

#include <cstdint>

#include "core/problem_signature.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace jitgemm {
namespace {

using ::jitgemm::support::IsOk;
using ::jitgemm::support::StatusIs;
using ::testing::HasSubstr;

// Fake device addresses: the checks only do arithmetic on them.
const void* At(uintptr_t x) { return reinterpret_cast<const void*>(x); }
void* AtMut(uintptr_t x) { return reinterpret_cast<void*>(x); }

class CheckPointersTest : public ::testing::Test {
 protected:
  GemmProblem p_ = Canonicalize(MakeGemm(64, 128, 256, DataType::kF16));
  // a: 64x256 halves = 32 KiB; b: 256x128 = 64 KiB; d: 64x128 = 16 KiB.
  GemmPointers ok_{At(0x100000), At(0x200000), nullptr, AtMut(0x300000), nullptr};
};

TEST_F(CheckPointersTest, AcceptsDisjointAlignedPointers) {
  EXPECT_THAT(CheckPointers(p_, ok_, 16), IsOk());
}

TEST_F(CheckPointersTest, RejectsNulls) {
  GemmPointers x = ok_;
  x.a = nullptr;
  EXPECT_THAT(CheckPointers(p_, x, 16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a: null")));
  x = ok_;
  x.d = nullptr;
  EXPECT_THAT(CheckPointers(p_, x, 16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("d: null")));
  GemmProblem with_c = p_;
  with_c.epilogue.beta = 1.f;
  EXPECT_THAT(CheckPointers(with_c, ok_, 16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("c: null")));
  GemmProblem with_bias = p_;
  with_bias.epilogue.bias = BiasMode::kPerColumn;
  EXPECT_THAT(CheckPointers(with_bias, ok_, 16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bias: null")));
}

TEST_F(CheckPointersTest, RejectsMisalignedPointerForVectorisedPlan) {
  GemmPointers x = ok_;
  x.b = At(0x200002);
  EXPECT_THAT(CheckPointers(p_, x, 16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("b: pointer")));
  EXPECT_THAT(CheckPointers(p_, x, 2), IsOk());
  x.b = At(0x200001);  // not even aligned to the 2-byte element
  EXPECT_THAT(CheckPointers(p_, x, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("element size")));
}

TEST_F(CheckPointersTest, RejectsOutputOverlappingInputs) {
  GemmPointers x = ok_;
  x.d = AtMut(0x100000 + 1024);
  EXPECT_THAT(CheckPointers(p_, x, 16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overlaps input a")));
  x = ok_;
  x.d = AtMut(0x200000 + 64 * 1024 - 16);
  EXPECT_THAT(CheckPointers(p_, x, 16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overlaps input b")));
}

TEST_F(CheckPointersTest, InPlaceCIsAllowedOnlyWithIdenticalLayout) {
  GemmProblem q = p_;
  q.epilogue.beta = 1.f;
  q = Canonicalize(q);
  GemmPointers x = ok_;
  x.c = x.d;
  EXPECT_THAT(CheckPointers(q, x, 16), IsOk());
  x.c = At(0x300000 + 32);
  EXPECT_THAT(CheckPointers(q, x, 16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overlaps input c")));
}

TEST(OperandSpanTest, CountsBatchesAndLeadingDimension) {
  Operand op{DataType::kBF16, Layout::kRowMajor, 12 * 1024, 1024};
  // 2560 rows of ld 12288, 1024 used per row, 12 interleaved groups.
  EXPECT_EQ(OperandSpanBytes(op, 2560, 1024, 12), ((2560 - 1) * 12 * 1024 + 1024 + 11 * 1024) * 2);
}

}  // namespace
}  // namespace jitgemm
