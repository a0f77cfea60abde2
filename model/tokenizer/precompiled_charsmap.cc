// Lookup in SentencePiece's precompiled charsmap. The layout of a Darts-clone unit (32 bits):
//   bit 31 leaf flag (a leaf unit holds a value in bits 0..30),
//   bits 0..7 label, bit 8 "has a leaf child", bit 9 offset scale, bits 10..31 offset.
// The child for byte c of node `id` is at id ^ offset(unit[id]) ^ c. Every index is bounds-checked
// here because the blob comes from a file.
#include "model/tokenizer/precompiled_charsmap.h"

#include <bit>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace transerve {
namespace {

inline bool HasLeaf(uint32_t unit) { return ((unit >> 8) & 1) == 1; }
inline uint32_t Value(uint32_t unit) { return unit & ((1u << 31) - 1); }
inline uint32_t Label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
inline uint32_t Offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

}  // namespace

absl::StatusOr<PrecompiledCharsMap> PrecompiledCharsMap::Parse(std::string_view blob) {
  PrecompiledCharsMap map;
  if (blob.empty()) return map;
  uint32_t trie_size = 0;
  if (blob.size() <= sizeof(trie_size)) {
    return absl::InvalidArgumentError("precompiled_charsmap is truncated (no trie)");
  }
  std::memcpy(&trie_size, blob.data(), sizeof(trie_size));
  if constexpr (std::endian::native == std::endian::big) trie_size = __builtin_bswap32(trie_size);
  blob.remove_prefix(sizeof(trie_size));
  if (trie_size > blob.size() || trie_size % sizeof(uint32_t) != 0 || trie_size == 0) {
    return absl::InvalidArgumentError(absl::StrCat("precompiled_charsmap is corrupt: trie size ",
                                                   trie_size, " for ", blob.size(),
                                                   " bytes of data"));
  }
  map.units_.resize(trie_size / sizeof(uint32_t));
  std::memcpy(map.units_.data(), blob.data(), trie_size);
  if constexpr (std::endian::native == std::endian::big) {
    for (uint32_t& u : map.units_) u = __builtin_bswap32(u);
  }
  map.replacements_.assign(blob.substr(trie_size));
  return map;
}

bool PrecompiledCharsMap::LongestMatch(std::string_view input, size_t* length,
                                       std::string_view* replacement) const {
  if (units_.empty()) return false;
  const size_t num_units = units_.size();
  size_t best_length = 0;
  uint32_t best_value = 0;
  uint32_t id = Offset(units_[0]);
  for (size_t i = 0; i < input.size(); ++i) {
    const auto c = static_cast<uint8_t>(input[i]);
    id ^= c;
    if (id >= num_units) break;
    const uint32_t unit = units_[id];
    if (Label(unit) != c) break;
    id ^= Offset(unit);
    if (HasLeaf(unit)) {
      if (id >= num_units) break;
      // Matches come shortest first, so the last one seen is the longest.
      best_length = i + 1;
      best_value = Value(units_[id]);
    }
  }
  if (best_length == 0 || best_value >= replacements_.size()) return false;
  const char* begin = replacements_.data() + best_value;
  const size_t max_len = replacements_.size() - best_value;
  const void* nul = std::memchr(begin, '\0', max_len);
  const size_t len = nul != nullptr ? static_cast<const char*>(nul) - begin : max_len;
  *length = best_length;
  *replacement = std::string_view(begin, len);
  return true;
}

}  // namespace transerve
