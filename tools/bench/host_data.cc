#include "tools/bench/host_data.h"

#include <cstring>

#include "core/host_types.h"

namespace jitgemm::bench {
namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

int64_t BufferElements(const Operand& op, int64_t batches, int64_t rows, int64_t cols) {
  return ElementIndex(op, batches - 1, rows - 1, cols - 1) + 1;
}

HostBuffer RandomBuffer(DataType type, int64_t count, uint64_t seed) {
  HostBuffer buf;
  buf.type = type;
  buf.values.resize(count);
  buf.bytes.resize(count * DataTypeSize(type));
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
        const uint16_t h = FloatToHalf(f);
        buf.values[i] = HalfToFloat(h);
        std::memcpy(&buf.bytes[i * 2], &h, 2);
        break;
      }
      case DataType::kBF16: {
        const uint16_t h = FloatToBf16(f);
        buf.values[i] = Bf16ToFloat(h);
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
      out[i] = type == DataType::kF16 ? HalfToFloat(h) : Bf16ToFloat(h);
    }
  }
  return out;
}

}  // namespace jitgemm::bench
