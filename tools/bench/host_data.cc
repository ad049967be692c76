#include "tools/bench/host_data.h"

#include <cmath>
#include <cstring>

namespace jitgemm::bench {
namespace {

uint32_t FloatBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

float BitsFloat(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

uint16_t FloatToHalfBits(float f) {
  const uint32_t x = FloatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return static_cast<uint16_t>(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (ax < 0x33000000u) return static_cast<uint16_t>(sign);             // below 2^-25
  const int e = static_cast<int>(ax >> 23);
  if (e < 113) {
    // Half subnormal: units of 2^-24.
    const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    const int shift = 126 - e;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(e - 112) << 10) | ((ax >> 13) & 0x3ffu);
  const uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return static_cast<uint16_t>(sign | h);
}

float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ffu;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400u), exp - 25);
  }
  return BitsFloat(FloatBits(v) | sign);
}

uint16_t FloatToBf16Bits(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float Bf16BitsToFloat(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

int ElementBytes(DataType type) { return type == DataType::kF32 ? 4 : 2; }

int64_t BufferElements(const Operand& op, int64_t batches, int64_t rows, int64_t cols) {
  return ElementIndex(op, batches - 1, rows - 1, cols - 1) + 1;
}

HostBuffer RandomBuffer(DataType type, int64_t count, uint64_t seed) {
  HostBuffer buf;
  buf.type = type;
  buf.values.resize(count);
  buf.bytes.resize(count * ElementBytes(type));
  uint64_t state = seed * 0x2545f4914f6cdd1dull + 1;
  for (int64_t i = 0; i < count; ++i) {
    // 24 random bits -> [-1, 1).
    const float f = static_cast<float>(SplitMix64(state) >> 40) * (2.0f / 16777216.0f) - 1.0f;
    switch (type) {
      case DataType::kF32: {
        buf.values[i] = f;
        std::memcpy(&buf.bytes[i * 4], &f, 4);
        break;
      }
      case DataType::kF16: {
        const uint16_t h = FloatToHalfBits(f);
        buf.values[i] = HalfBitsToFloat(h);
        std::memcpy(&buf.bytes[i * 2], &h, 2);
        break;
      }
      case DataType::kBF16: {
        const uint16_t h = FloatToBf16Bits(f);
        buf.values[i] = Bf16BitsToFloat(h);
        std::memcpy(&buf.bytes[i * 2], &h, 2);
        break;
      }
    }
  }
  return buf;
}

std::vector<float> DecodeElements(DataType type, const void* bytes, int64_t count) {
  std::vector<float> out(count);
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (int64_t i = 0; i < count; ++i) {
    if (type == DataType::kF32) {
      std::memcpy(&out[i], p + i * 4, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, p + i * 2, 2);
      out[i] = type == DataType::kF16 ? HalfBitsToFloat(h) : Bf16BitsToFloat(h);
    }
  }
  return out;
}

}  // namespace jitgemm::bench
