// A segment's translation as the text layer sees it: plain strings, byte ranges and soft
// alignment weights. The text layer never sees token ids or the engine; the code that runs the
// model (server, CLI) fills this from the pieces and cross-attention the engine returns.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace transerve::text {

// Bytes [begin, end) of a string.
struct ByteRange {
  size_t begin = 0;
  size_t end = 0;
  bool empty() const { return begin >= end; }
  friend bool operator==(const ByteRange&, const ByteRange&) = default;
};

struct AlignedTranslation {
  std::string source;  // the segment as it was sent to the model
  std::string target;  // its translation
  // One range per source / target token, in token order; a token with no text of its own
  // (EOS, a normalised-away character) has an empty range at the position it stands at.
  std::vector<ByteRange> source_tokens;
  std::vector<ByteRange> target_tokens;
  // Row-major [target_tokens.size() x source_tokens.size()]: how much target token t attends
  // to source token s. Empty when the model returned no alignment.
  std::vector<float> weights;
  // Instead of weights: each target token's source token (-1: none), as HardAlignment gives it.
  // What a translation assembled from several (a whole HTML block) carries, so that its size
  // grows with its tokens, not with their square.
  std::vector<int> hard;

  bool has_alignment() const {
    return (!weights.empty() && weights.size() == source_tokens.size() * target_tokens.size()) ||
           (!hard.empty() && hard.size() == target_tokens.size());
  }
};

// The byte range of each SentencePiece piece in `text` (the source it was cut from, or the
// text the pieces were detokenised into). "▁" marks a word start and matches any whitespace;
// a piece that does not match the text where it should (normalisation, <unk>, </s>) gets the
// bytes up to where the next matching piece starts, or an empty range.
std::vector<ByteRange> PieceRanges(std::string_view text, const std::vector<std::string>& pieces);

// For each target token, the source token it attends to most (-1 when there is no alignment
// or the token has no text). Source tokens with empty ranges (EOS) never win.
std::vector<int> HardAlignment(const AlignedTranslation& t);

// The target bytes that source bytes `source` became: from the first to the last target token
// whose hard-aligned source token overlaps `source`, widened to whole words (never splitting a
// word of the target). Empty (at begin = end = the mapped point) when no target token aligns.
ByteRange MapSourceRange(const AlignedTranslation& t, ByteRange source);

// Where, in the target, a point of the source (an empty element, a placeholder) belongs: after
// the target word aligned to the source token ending before `source_pos`, else before the
// target word aligned to the token starting at or after it; always a word boundary of the
// target (0 or target.size() when nothing aligns).
size_t MapSourcePoint(const AlignedTranslation& t, size_t source_pos);

// A translation made in two legs (a pivot through a third language) as one: `first` translates
// the source into a text that `second` translates (second.source == first.target). The result
// keeps first's source and second's target; target token t attends to source token s by
//   sum over second's source tokens p and first's target tokens q of
//   second.weights[t][p] * overlap(p, q) * first.weights[q][s],
// where overlap(p, q) is the share of p's bytes that q covers (an empty p, such as EOS, is
// matched to the empty q at the same place). No alignment when either leg has no weights or the
// two do not meet on the same text.
AlignedTranslation ChainTranslations(const AlignedTranslation& first,
                                     const AlignedTranslation& second);

// The same two with `hard` = HardAlignment(t) computed once, for a caller mapping many ranges of
// one translation (each call above computes it: target x source tokens).
ByteRange MapSourceRange(const AlignedTranslation& t, const std::vector<int>& hard,
                         ByteRange source);
size_t MapSourcePoint(const AlignedTranslation& t, const std::vector<int>& hard, size_t source_pos);

}  // namespace transerve::text
