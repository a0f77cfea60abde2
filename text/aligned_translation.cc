#include "text/aligned_translation.h"

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <limits>

#include "text/utf8_chars.h"

namespace transerve::text {
namespace {

constexpr std::string_view kWordMark = "\xE2\x96\x81";  // U+2581, SentencePiece's word start

bool IsSpace(std::string_view text, size_t pos, size_t* length) {
  UChar32 c;
  int32_t i = static_cast<int32_t>(pos);
  U8_NEXT(text.data(), i, static_cast<int32_t>(text.size()), c);
  *length = static_cast<size_t>(i) - pos;
  return c >= 0 && u_isUWhiteSpace(c);
}

size_t SkipSpace(std::string_view text, size_t pos) {
  size_t n = 0;
  while (pos < text.size() && IsSpace(text, pos, &n)) pos += n;
  return pos;
}

size_t TrimSpaceBack(std::string_view text, size_t begin, size_t end) {
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t n = 0;
    if (!IsSpace(text, start, &n)) break;
    end = start;
  }
  return end;
}

std::string_view PieceBody(std::string_view piece, bool* word_start) {
  *word_start = false;
  while (piece.substr(0, kWordMark.size()) == kWordMark) {
    *word_start = true;
    piece.remove_prefix(kWordMark.size());
  }
  return piece;
}

// Moves `pos` back to the start of the word it is inside (no move at a word boundary).
size_t WordStart(std::string_view s, size_t pos) {
  while (pos > 0 && IsWordChar(CharBefore(s, pos)) && IsWordChar(CharAt(s, pos))) {
    int32_t i = static_cast<int32_t>(pos);
    U8_BACK_1(reinterpret_cast<const uint8_t*>(s.data()), 0, i);
    pos = static_cast<size_t>(i);
  }
  return pos;
}

size_t WordEnd(std::string_view s, size_t pos) {
  while (pos < s.size() && IsWordChar(CharBefore(s, pos)) && IsWordChar(CharAt(s, pos))) {
    int32_t i = static_cast<int32_t>(pos);
    U8_FWD_1(reinterpret_cast<const uint8_t*>(s.data()), i, static_cast<int32_t>(s.size()));
    pos = static_cast<size_t>(i);
  }
  return pos;
}

// The target span of the tokens hard-aligned to any source token in [first, last].
ByteRange TargetOfSourceTokens(const AlignedTranslation& t, const std::vector<int>& hard, int first,
                               int last) {
  ByteRange r{std::numeric_limits<size_t>::max(), 0};
  for (size_t i = 0; i < hard.size() && i < t.target_tokens.size(); ++i) {
    if (hard[i] < first || hard[i] > last || t.target_tokens[i].empty()) continue;
    r.begin = std::min(r.begin, t.target_tokens[i].begin);
    r.end = std::max(r.end, t.target_tokens[i].end);
  }
  if (r.begin > r.end) return ByteRange{};
  return r;
}

// The word boundary of the target nearest to the same relative position as `source_pos`.
size_t ProportionalPoint(const AlignedTranslation& t, size_t source_pos) {
  if (t.source.empty() || t.target.empty()) return 0;
  const double f = static_cast<double>(source_pos) / static_cast<double>(t.source.size());
  size_t p = std::min(t.target.size(), static_cast<size_t>(f * t.target.size() + 0.5));
  while (p > 0 && (static_cast<unsigned char>(t.target[p]) & 0xC0) == 0x80) --p;
  const size_t back = WordStart(t.target, p), fwd = WordEnd(t.target, p);
  return p - back <= fwd - p ? back : fwd;
}

}  // namespace

std::vector<ByteRange> PieceRanges(std::string_view text, const std::vector<std::string>& pieces) {
  std::vector<ByteRange> ranges(pieces.size());
  size_t pos = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    bool word_start = false;
    const std::string_view body = PieceBody(pieces[i], &word_start);
    if (word_start) pos = SkipSpace(text, pos);
    if (body.empty()) {
      ranges[i] = {pos, pos};
      continue;
    }
    if (text.substr(pos, body.size()) == body) {
      ranges[i] = {pos, pos + body.size()};
      pos += body.size();
      continue;
    }
    // No match here (normalised text, <unk>, </s>): this piece covers the bytes up to where the
    // next piece that matches the text begins.
    size_t next = text.size();
    for (size_t j = i + 1; j < pieces.size(); ++j) {
      bool ws = false;
      const std::string_view b = PieceBody(pieces[j], &ws);
      if (b.empty()) continue;
      const size_t at = text.find(b, pos);
      if (at != std::string_view::npos) {
        next = at;
        break;
      }
    }
    // A word start in the next piece ends this one at the next whitespace.
    bool next_starts_word = false;
    if (i + 1 < pieces.size()) PieceBody(pieces[i + 1], &next_starts_word);
    if (next_starts_word) {
      size_t n = 0;
      for (size_t q = pos; q < next; q += std::max<size_t>(n, 1)) {
        if (IsSpace(text, q, &n)) {
          next = q;
          break;
        }
      }
    }
    ranges[i] = {pos, TrimSpaceBack(text, pos, next)};
    pos = next;
  }
  return ranges;
}

std::vector<int> HardAlignment(const AlignedTranslation& t) {
  std::vector<int> hard(t.target_tokens.size(), -1);
  if (!t.has_alignment()) return hard;
  if (t.hard.size() == t.target_tokens.size()) {
    for (size_t i = 0; i < hard.size(); ++i) {
      const int s = t.hard[i];
      const bool valid = s >= 0 && static_cast<size_t>(s) < t.source_tokens.size() &&
                         !t.source_tokens[s].empty() && !t.target_tokens[i].empty();
      hard[i] = valid ? s : -1;
    }
    return hard;
  }
  const size_t s_count = t.source_tokens.size();
  for (size_t i = 0; i < hard.size(); ++i) {
    if (t.target_tokens[i].empty()) continue;
    float best = -1;
    for (size_t s = 0; s < s_count; ++s) {
      if (t.source_tokens[s].empty()) continue;
      const float w = t.weights[i * s_count + s];
      if (w > best) {
        best = w;
        hard[i] = static_cast<int>(s);
      }
    }
  }
  return hard;
}

ByteRange MapSourceRange(const AlignedTranslation& t, ByteRange source) {
  return MapSourceRange(t, HardAlignment(t), source);
}

size_t MapSourcePoint(const AlignedTranslation& t, size_t source_pos) {
  return MapSourcePoint(t, HardAlignment(t), source_pos);
}

ByteRange MapSourceRange(const AlignedTranslation& t, const std::vector<int>& hard,
                         ByteRange source) {
  int first = -1, last = -1;
  for (size_t s = 0; s < t.source_tokens.size(); ++s) {
    const ByteRange& tok = t.source_tokens[s];
    if (tok.empty() || tok.begin >= source.end || tok.end <= source.begin) continue;
    if (first < 0) first = static_cast<int>(s);
    last = static_cast<int>(s);
  }
  ByteRange r = first < 0 ? ByteRange{} : TargetOfSourceTokens(t, hard, first, last);
  if (r.empty()) {
    const size_t p = MapSourcePoint(t, hard, source.begin);
    return {p, p};
  }
  return {WordStart(t.target, r.begin), WordEnd(t.target, r.end)};
}

size_t MapSourcePoint(const AlignedTranslation& t, const std::vector<int>& hard,
                      size_t source_pos) {
  int before = -1, after = -1;
  for (size_t s = 0; s < t.source_tokens.size(); ++s) {
    const ByteRange& tok = t.source_tokens[s];
    if (tok.empty()) continue;
    if (tok.end <= source_pos) before = static_cast<int>(s);
    if (tok.begin >= source_pos && after < 0) after = static_cast<int>(s);
  }
  if (before >= 0) {
    const ByteRange r = TargetOfSourceTokens(t, hard, before, before);
    if (!r.empty()) return WordEnd(t.target, r.end);
  }
  if (after >= 0) {
    const ByteRange r = TargetOfSourceTokens(t, hard, after, after);
    if (!r.empty()) return WordStart(t.target, r.begin);
  }
  if (before < 0) return 0;
  if (after < 0) return t.target.size();
  return ProportionalPoint(t, source_pos);
}

namespace {

bool HasWeights(const AlignedTranslation& t) {
  return !t.weights.empty() && t.weights.size() == t.source_tokens.size() * t.target_tokens.size();
}

// How much of pivot token p (second's source) each pivot token q (first's target) covers, as a
// row per p that sums to 1 (or 0 when nothing covers p).
std::vector<float> PivotOverlap(const std::vector<ByteRange>& p_tokens,
                                const std::vector<ByteRange>& q_tokens) {
  const size_t np = p_tokens.size(), nq = q_tokens.size();
  std::vector<float> m(np * nq, 0.0f);
  for (size_t p = 0; p < np; ++p) {
    const ByteRange a = p_tokens[p];
    float total = 0;
    for (size_t q = 0; q < nq; ++q) {
      const ByteRange b = q_tokens[q];
      float share = 0;
      if (a.empty()) {
        share = b.empty() && b.begin == a.begin ? 1.0f : 0.0f;
      } else {
        const size_t lo = std::max(a.begin, b.begin), hi = std::min(a.end, b.end);
        share = hi > lo ? static_cast<float>(hi - lo) : 0.0f;
      }
      m[p * nq + q] = share;
      total += share;
    }
    if (total > 0) {
      for (size_t q = 0; q < nq; ++q) m[p * nq + q] /= total;
    }
  }
  return m;
}

}  // namespace

AlignedTranslation ChainTranslations(const AlignedTranslation& first,
                                     const AlignedTranslation& second) {
  AlignedTranslation out;
  out.source = first.source;
  out.source_tokens = first.source_tokens;
  out.target = second.target;
  out.target_tokens = second.target_tokens;
  if (!HasWeights(first) || !HasWeights(second) || first.target != second.source) return out;
  const size_t nt = second.target_tokens.size(), np = second.source_tokens.size();
  const size_t nq = first.target_tokens.size(), ns = first.source_tokens.size();
  const std::vector<float> overlap = PivotOverlap(second.source_tokens, first.target_tokens);
  // (second · overlap): each target token's attention over first's target tokens.
  std::vector<float> via(nt * nq, 0.0f);
  for (size_t t = 0; t < nt; ++t) {
    for (size_t p = 0; p < np; ++p) {
      const float w = second.weights[t * np + p];
      if (w == 0) continue;
      for (size_t q = 0; q < nq; ++q) via[t * nq + q] += w * overlap[p * nq + q];
    }
  }
  out.weights.assign(nt * ns, 0.0f);
  for (size_t t = 0; t < nt; ++t) {
    for (size_t q = 0; q < nq; ++q) {
      const float w = via[t * nq + q];
      if (w == 0) continue;
      for (size_t s = 0; s < ns; ++s) out.weights[t * ns + s] += w * first.weights[q * ns + s];
    }
  }
  return out;
}

}  // namespace transerve::text
