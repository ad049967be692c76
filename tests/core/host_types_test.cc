#include "core/host_types.h"

#include <cmath>
#include <cstdint>
#include <random>

#include "gtest/gtest.h"

namespace jitgemm {
namespace {

TEST(HostTypesTest, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(FloatToHalf(f), h) << std::hex << h;
  }
}

TEST(HostTypesTest, FloatToHalfRoundsLikeTheCompiler) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> mag(-30.f, 17.f);
  for (int i = 0; i < 200000; ++i) {
    const float f = std::ldexp(1.0f + (rng() % 1000) / 1000.f, static_cast<int>(mag(rng))) *
                    ((rng() & 1) ? 1.f : -1.f);
    const _Float16 want = static_cast<_Float16>(f);
    uint16_t bits;
    std::memcpy(&bits, &want, 2);
    ASSERT_EQ(FloatToHalf(f), bits) << f;
  }
}

TEST(HostTypesTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(-2.5f)), -2.5f);
  EXPECT_EQ(FloatToBf16(std::ldexp(1.0f, -130)), 0x0008);  // subnormal: 8 * 2^-133
  EXPECT_EQ(FloatToBf16(Bf16ToFloat(0xffc1)), 0xffc1);     // NaN keeps sign and payload
  EXPECT_EQ(FloatToBf16(Bf16ToFloat(0x7f81)), 0x7fc1);     // signalling NaN comes back quiet
  EXPECT_EQ(FloatToHalf(Bf16ToFloat(0xffc0)), 0xfe00);     // NaN stays NaN in f16
}

}  // namespace
}  // namespace jitgemm
