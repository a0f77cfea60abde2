// Stored little-endian float32 / float16 / bfloat16 elements -> float32: the one conversion the
// checkpoint readers share (safetensors and CTranslate2's model.bin).
#pragma once

#include <cstddef>
#include <cstdint>

namespace transerve {

enum class StoredFloat : uint8_t { kFloat32, kFloat16, kBFloat16 };

// Bytes per stored element.
inline std::size_t StoredFloatWidth(StoredFloat kind) {
  return kind == StoredFloat::kFloat32 ? 4 : 2;
}

// out[0..count) = the `count` elements at `bytes` (any alignment), exactly: float16 subnormals,
// infinities and NaN payloads included.
void WidenFloats(StoredFloat kind, const uint8_t* bytes, std::size_t count, float* out);

}  // namespace transerve
