#include "text/sentence_splitter.h"

#include <algorithm>

#include "text/layout_marks.h"
#include "text/sentence_breaks.h"

namespace transerve::text {
namespace {

// Appends pieces, merging neighbouring layout into one piece and demoting a "sentence" with no
// letter or digit (a rule "-----", a lone emoji) to layout.
class PieceList {
 public:
  explicit PieceList(std::string_view text) : text_(text) {}

  void Add(size_t begin, size_t end, bool translate) {
    if (begin >= end) return;
    if (translate && !HasLetterOrDigit(text_.substr(begin, end - begin))) translate = false;
    if (!translate && !pieces_.empty() && !pieces_.back().translate &&
        pieces_.back().range.end == begin) {
      pieces_.back().range.end = end;
      return;
    }
    pieces_.push_back({{begin, end}, translate});
  }

  std::vector<TextPiece> Take() { return std::move(pieces_); }

 private:
  std::string_view text_;
  std::vector<TextPiece> pieces_;
};

size_t SkipSpaces(std::string_view text, size_t pos, size_t end) {
  while (pos < end) {
    const size_t n = SpaceLength(text, pos);
    if (n == 0) break;
    pos += n;
  }
  return pos;
}

// Where the whitespace at the end of [begin, end) starts.
size_t TrimEnd(std::string_view text, size_t begin, size_t end) {
  size_t trimmed = begin;
  for (size_t pos = begin; pos < end;) {
    const size_t space = SpaceLength(text, pos);
    if (space != 0) {
      pos += space;
    } else {
      pos += CharLength(text, pos);
      trimmed = pos;
    }
  }
  return std::min(trimmed, end);
}

// [begin, end) as one sentence with its surrounding whitespace as layout.
void AddTrimmed(std::string_view text, size_t begin, size_t end, PieceList& pieces) {
  const size_t first = SkipSpaces(text, begin, end);
  const size_t last = TrimEnd(text, first, end);
  pieces.Add(begin, first, false);
  pieces.Add(first, last, true);
  pieces.Add(last, end, false);
}

// A cell: text between tabs (or the whole line when it has none).
void SplitCell(std::string_view text, size_t begin, size_t end, const SplitOptions& options,
               PieceList& pieces) {
  if (!options.split_sentences) {
    AddTrimmed(text, begin, end, pieces);
    return;
  }
  size_t start = begin;
  for (size_t next : SentenceStarts(text.substr(begin, end - begin), options.language)) {
    AddTrimmed(text, start, begin + next, pieces);
    start = begin + next;
  }
  AddTrimmed(text, start, end, pieces);
}

// One line without its line break: indentation, a list marker, then cells split at tabs (a
// tab inside a line aligns columns; no sentence spans one).
void SplitLine(std::string_view text, size_t begin, size_t end, const SplitOptions& options,
               PieceList& pieces) {
  size_t pos = SkipSpaces(text, begin, end);
  // Up to two markers: "- 1. Nested item".
  for (int marker = 0; marker < 2; ++marker) pos += ListMarkerLength(text.substr(pos, end - pos));
  pieces.Add(begin, pos, false);
  size_t cell = pos;
  while (pos < end) {
    if (text[pos] != '\t') {
      pos += CharLength(text, pos);
      continue;
    }
    // The whitespace run around this tab is layout: the cell ends where it starts.
    const size_t cell_end = TrimEnd(text, cell, pos);
    SplitCell(text, cell, cell_end, options, pieces);
    pos = SkipSpaces(text, pos, end);
    pieces.Add(cell_end, pos, false);
    cell = pos;
  }
  SplitCell(text, cell, end, options, pieces);
}

}  // namespace

std::vector<TextPiece> SplitSentences(std::string_view text, const SplitOptions& options) {
  PieceList pieces(text);
  size_t line = 0;
  while (line < text.size()) {
    size_t end = line;
    size_t line_break = 0;
    while (end < text.size() && (line_break = LineBreakLength(text, end)) == 0) ++end;
    SplitLine(text, line, end, options, pieces);
    pieces.Add(end, end + line_break, false);
    line = end + line_break;
  }
  return pieces.Take();
}

}  // namespace transerve::text
