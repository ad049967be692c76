// Host-side fp16 and bf16: conversions from and to float that round to
// nearest even (as the compiler's casts and the device's cvt.rn do), with
// subnormals, infinities and NaN, and element access by DataType. The one
// copy for the library, its tools and its tests.
//
// Thread safety: pure functions.
#ifndef JITGEMM_CORE_HOST_TYPES_H_
#define JITGEMM_CORE_HOST_TYPES_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "jitgemm/problem.h"

namespace jitgemm {

inline uint16_t FloatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
inline float Bf16ToFloat(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t FloatToHalf(float f) {
  // Round to nearest even through the exact fp32 bit pattern.
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t abs = x & 0x7fffffff;
  if (abs >= 0x7f800000)
    return static_cast<uint16_t>(sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0));
  if (abs >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // overflow to inf
  if (abs < 0x38800000) {                                              // subnormal or zero
    // value = 1.m * 2^(e-127) = h * 2^-24  =>  h = mant24 >> (126 - e)
    const int shift = 126 - static_cast<int>(abs >> 23);
    if (shift > 24) return static_cast<uint16_t>(sign);
    const uint32_t mant = (abs & 0x7fffff) | 0x800000;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = ((abs - 0x38000000) >> 13);
  const uint32_t rem = abs & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}
inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  uint32_t u =
      exp == 31 ? (sign | 0x7f800000 | (mant << 13)) : (sign | ((exp + 112) << 23) | (mant << 13));
  std::memcpy(&f, &u, 4);
  return f;
}

// Reads element i of a buffer of `type` as float.
inline float LoadAs(DataType type, const void* base, int64_t i) {
  switch (type) {
    case DataType::kF32:
      return static_cast<const float*>(base)[i];
    case DataType::kF16:
      return HalfToFloat(static_cast<const uint16_t*>(base)[i]);
    case DataType::kBF16:
      return Bf16ToFloat(static_cast<const uint16_t*>(base)[i]);
  }
  return 0;
}
inline void StoreAs(DataType type, void* base, int64_t i, float v) {
  switch (type) {
    case DataType::kF32:
      static_cast<float*>(base)[i] = v;
      break;
    case DataType::kF16:
      static_cast<uint16_t*>(base)[i] = FloatToHalf(v);
      break;
    case DataType::kBF16:
      static_cast<uint16_t*>(base)[i] = FloatToBf16(v);
      break;
  }
}

}  // namespace jitgemm

#endif  // JITGEMM_CORE_HOST_TYPES_H_
