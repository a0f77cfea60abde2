// The merge loop keeps SentencePiece's order exactly: a max-heap of candidate pairs by score,
// the leftmost first on ties, stale candidates (a side already merged away) skipped when popped.
#include "model/tokenizer/bpe_model.h"

#include <algorithm>
#include <queue>
#include <utility>

#include "model/tokenizer/utf8.h"

namespace transerve {

BpeModel::BpeModel(std::vector<float> scores, std::vector<PieceType> types, int32_t unk_id,
                   PieceTrie trie, PieceTrie user_defined)
    : scores_(std::move(scores)),
      types_(std::move(types)),
      unk_id_(unk_id),
      trie_(std::move(trie)),
      user_defined_(std::move(user_defined)) {}

void BpeModel::Encode(std::string_view normalized, std::vector<Span>* spans) const {
  spans->clear();
  if (normalized.empty()) return;

  // The symbols: a doubly linked list over the text, each [begin, end); a merged-away symbol is
  // left empty (begin == end).
  struct Symbol {
    uint32_t begin;
    uint32_t end;
    int32_t prev;
    int32_t next;
    bool frozen;  // a user-defined symbol: never merged
  };
  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < normalized.size();) {
    size_t len = user_defined_.LongestPrefix(normalized, pos);
    const bool frozen = len > 0;
    if (!frozen) {
      len = std::min<size_t>(normalized.size() - pos, utf8::OneCharLen(normalized[pos]));
    }
    const int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(pos + len), index - 1,
                       pos + len < normalized.size() ? index + 1 : -1, frozen});
    pos += len;
  }

  struct Candidate {
    float score;
    int32_t left;
    int32_t right;
    uint32_t size;  // the merged length when pushed: a candidate whose sides changed is stale
  };
  auto worse = [](const Candidate& a, const Candidate& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)> agenda(worse);
  // Each merge into an UNUSED piece, in the order seen: the last one for a piece's text says how
  // it is split back (upstream keeps one split per piece string, the last written).
  std::vector<UnusedSplit> unused_splits;
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0 || symbols[left].frozen || symbols[right].frozen) return;
    const uint32_t begin = symbols[left].begin;
    const uint32_t end = symbols[right].end;
    const int32_t id = trie_.Find(normalized.substr(begin, end - begin));
    if (id < 0) return;
    agenda.push({scores_[id], left, right, end - begin});
    if (types_[id] == PieceType::kUnused) unused_splits.push_back({begin, symbols[left].end, end});
  };
  for (size_t i = 1; i < symbols.size(); ++i) {
    consider(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
  }
  while (!agenda.empty()) {
    const Candidate top = agenda.top();
    agenda.pop();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    if (left.begin == left.end || right.begin == right.end ||
        (left.end - left.begin) + (right.end - right.begin) != top.size) {
      continue;
    }
    left.end = right.end;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    right.begin = right.end;
    consider(left.prev, top.left);
    consider(top.left, left.next);
  }

  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    Resegment(normalized, symbols[i].begin, symbols[i].end, unused_splits, spans);
  }
}

void BpeModel::Resegment(std::string_view normalized, uint32_t begin, uint32_t end,
                         const std::vector<UnusedSplit>& unused_splits,
                         std::vector<Span>* spans) const {
  const int32_t id = trie_.Find(normalized.substr(begin, end - begin));
  if (id < 0) {
    spans->push_back({begin, end, unk_id_});
    return;
  }
  if (types_[id] == PieceType::kUnused) {
    // The last split recorded for this piece's text (upstream keys them by the piece string).
    const std::string_view text = normalized.substr(begin, end - begin);
    for (auto it = unused_splits.rbegin(); it != unused_splits.rend(); ++it) {
      if (it->end - it->begin != text.size() ||
          normalized.substr(it->begin, it->end - it->begin) != text) {
        continue;
      }
      const uint32_t left_size = it->left_end - it->begin;
      Resegment(normalized, begin, begin + left_size, unused_splits, spans);
      Resegment(normalized, begin + left_size, end, unused_splits, spans);
      return;
    }
  }
  spans->push_back({begin, end, id});
}

}  // namespace transerve
