// A byte-wise double-array trie mapping piece strings to ids, built once at load time. Encoding
// walks it from every character position, so a step is one array access and a compare.
#ifndef TRANSERVE_MODEL_TOKENIZER_PIECE_TRIE_H_
#define TRANSERVE_MODEL_TOKENIZER_PIECE_TRIE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace transerve {

class PieceTrie {
 public:
  PieceTrie() = default;

  // Builds the trie. Keys must be non-empty and distinct; values must be >= 0.
  static PieceTrie Build(std::vector<std::pair<std::string_view, int32_t>> entries);

  bool empty() const { return units_.empty(); }

  // The value stored for `key`, or -1.
  int32_t Find(std::string_view key) const;

  // Calls fn(end, value) for every key that equals text[begin, end), shortest first.
  template <typename Fn>
  void ForEachPrefix(std::string_view text, size_t begin, Fn&& fn) const {
    if (units_.empty()) return;
    uint32_t node = 0;
    for (size_t pos = begin; pos < text.size(); ++pos) {
      const uint32_t next = units_[node].base + static_cast<uint8_t>(text[pos]);
      if (next >= units_.size() || units_[next].check != static_cast<int32_t>(node)) return;
      node = next;
      if (units_[node].value >= 0) fn(pos + 1, units_[node].value);
    }
  }

  // Length of the longest key that is a prefix of text[begin...], or 0.
  size_t LongestPrefix(std::string_view text, size_t begin) const;

 private:
  struct Unit {
    uint32_t base = 0;   // children of this node live at base + byte
    int32_t check = -1;  // parent node index; -1 marks a free cell
    int32_t value = -1;  // id of the key ending here, or -1
  };
  class Builder;

  std::vector<Unit> units_;
};

}  // namespace transerve

#endif  // TRANSERVE_MODEL_TOKENIZER_PIECE_TRIE_H_
