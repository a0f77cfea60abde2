#include "model/loader/widen_floats.h"

#include <bit>
#include <cstring>
#include <vector>

#include "model/core/half.h"

namespace transerve {
namespace {

std::vector<float> BuildHalfTable() {
  std::vector<float> t(65536);
  for (uint32_t i = 0; i < 65536; ++i) t[i] = HalfToFloat(static_cast<uint16_t>(i));
  return t;
}

uint16_t LoadU16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (static_cast<uint16_t>(p[1]) << 8));
}

}  // namespace

void WidenFloats(StoredFloat kind, const uint8_t* bytes, std::size_t count, float* out) {
  switch (kind) {
    case StoredFloat::kFloat32:
      if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(out, bytes, 4 * count);
      } else {
        for (std::size_t i = 0; i < count; ++i) {
          const uint8_t* p = bytes + 4 * i;
          out[i] = std::bit_cast<float>(
              static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
              (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24));
        }
      }
      return;
    case StoredFloat::kFloat16: {
      // A table makes the per-element conversion a load; built once, thread-safely.
      static const std::vector<float> kHalfTable = BuildHalfTable();
      for (std::size_t i = 0; i < count; ++i) out[i] = kHalfTable[LoadU16(bytes + 2 * i)];
      return;
    }
    case StoredFloat::kBFloat16:
      for (std::size_t i = 0; i < count; ++i) out[i] = BFloat16ToFloat(LoadU16(bytes + 2 * i));
      return;
  }
}

}  // namespace transerve
