// Double-array construction. Keys are sorted and each node's children are placed at the first
// base where all their cells are free. As in Darts-clone, the array grows in blocks of 256 cells
// and only the newest kOpenBlocks blocks are searched for free cells (through a linked list of
// them), which keeps construction linear in the number of nodes; free cells left behind in
// closed blocks simply stay unused.
#include "model/tokenizer/piece_trie.h"

#include <algorithm>

namespace transerve {

class PieceTrie::Builder {
 public:
  explicit Builder(std::vector<std::pair<std::string_view, int32_t>>& entries)
      : entries_(entries) {}

  std::vector<Unit> Run() {
    AddBlock();
    Take(0);  // the root: occupied, and nobody's child (base >= 1 keeps it that way)
    units_[0].check = -2;
    if (!entries_.empty()) Place(0, 0, entries_.size(), 0);
    // Trim unused cells at the end; lookups bounds-check against the size.
    size_t used = units_.size();
    while (used > 1 && units_[used - 1].check == -1) --used;
    units_.resize(used);
    units_.shrink_to_fit();
    return std::move(units_);
  }

 private:
  static constexpr size_t kBlock = 256;
  static constexpr size_t kOpenBlocks = 16;

  // entries_[lo, hi) share their first `depth` bytes, which spell node `node`.
  void Place(uint32_t node, size_t lo, size_t hi, size_t depth) {
    if (entries_[lo].first.size() == depth) {
      units_[node].value = entries_[lo].second;
      ++lo;
    }
    if (lo == hi) return;

    std::vector<uint8_t> labels;
    for (size_t i = lo; i < hi; ++i) {
      const auto c = static_cast<uint8_t>(entries_[i].first[depth]);
      if (labels.empty() || labels.back() != c) labels.push_back(c);
    }
    const uint32_t base = FindBase(labels);
    units_[node].base = base;
    for (const uint8_t c : labels) {
      Take(base + c);
      units_[base + c].check = static_cast<int32_t>(node);
    }

    size_t begin = lo;
    for (const uint8_t c : labels) {
      size_t end = begin;
      while (end < hi && static_cast<uint8_t>(entries_[end].first[depth]) == c) ++end;
      Place(base + c, begin, end, depth + 1);
      begin = end;
    }
  }

  bool Fits(uint32_t base, const std::vector<uint8_t>& labels) const {
    for (const uint8_t c : labels) {
      const size_t cell = base + c;
      if (cell < open_begin_ || cell >= units_.size() || units_[cell].check != -1) return false;
    }
    return true;
  }

  uint32_t FindBase(const std::vector<uint8_t>& labels) {
    if (head_ >= 0) {
      int32_t cell = head_;
      do {
        if (static_cast<uint32_t>(cell) > labels.front()) {
          const uint32_t base = static_cast<uint32_t>(cell) - labels.front();
          if (Fits(base, labels)) return base;
        }
        cell = next_[cell];
      } while (cell != head_);
    }
    // Nothing fits in the open blocks: the children go into a fresh block.
    const auto base = static_cast<uint32_t>(units_.size());
    AddBlock();
    return base;
  }

  void AddBlock() {
    const size_t begin = units_.size();
    units_.resize(begin + kBlock);
    next_.resize(begin + kBlock);
    prev_.resize(begin + kBlock);
    for (size_t i = begin; i < begin + kBlock; ++i) Link(static_cast<int32_t>(i));
    if (units_.size() / kBlock > kOpenBlocks) {
      // Close the oldest open block: its free cells leave the list for good.
      for (size_t i = open_begin_; i < open_begin_ + kBlock; ++i) {
        if (units_[i].check == -1) Unlink(static_cast<int32_t>(i));
      }
      open_begin_ += kBlock;
    }
  }

  // Marks `cell` used (it must be free and open).
  void Take(uint32_t cell) { Unlink(static_cast<int32_t>(cell)); }

  void Link(int32_t cell) {
    if (head_ < 0) {
      head_ = next_[cell] = prev_[cell] = cell;
      return;
    }
    const int32_t tail = prev_[head_];
    next_[tail] = cell;
    prev_[cell] = tail;
    next_[cell] = head_;
    prev_[head_] = cell;
  }

  void Unlink(int32_t cell) {
    if (next_[cell] == cell) {
      head_ = -1;
      return;
    }
    next_[prev_[cell]] = next_[cell];
    prev_[next_[cell]] = prev_[cell];
    if (head_ == cell) head_ = next_[cell];
  }

  std::vector<std::pair<std::string_view, int32_t>>& entries_;
  std::vector<Unit> units_;
  std::vector<int32_t> next_;  // circular list of free cells in the open blocks
  std::vector<int32_t> prev_;
  int32_t head_ = -1;
  size_t open_begin_ = 0;  // first cell of the oldest open block
};

PieceTrie PieceTrie::Build(std::vector<std::pair<std::string_view, int32_t>> entries) {
  // Callers pass distinct non-empty keys; drop anything else rather than corrupt the layout.
  std::erase_if(entries, [](const auto& e) { return e.first.empty() || e.second < 0; });
  std::sort(entries.begin(), entries.end());
  entries.erase(std::unique(entries.begin(), entries.end(),
                            [](const auto& a, const auto& b) { return a.first == b.first; }),
                entries.end());
  PieceTrie trie;
  trie.units_ = Builder(entries).Run();
  return trie;
}

int32_t PieceTrie::Find(std::string_view key) const {
  if (units_.empty() || key.empty()) return -1;
  uint32_t node = 0;
  for (const char ch : key) {
    const uint32_t next = units_[node].base + static_cast<uint8_t>(ch);
    if (next >= units_.size() || units_[next].check != static_cast<int32_t>(node)) return -1;
    node = next;
  }
  return units_[node].value;
}

size_t PieceTrie::LongestPrefix(std::string_view text, size_t begin) const {
  size_t longest = 0;
  ForEachPrefix(text, begin, [&](size_t end, int32_t) { longest = end - begin; });
  return longest;
}

}  // namespace transerve
