// CutLongSentence (declared in sentence_splitter.h): a sentence too long for the model, cut
// into parts that fit.
#include <algorithm>
#include <array>

#include "text/layout_marks.h"
#include "text/sentence_splitter.h"

namespace transerve::text {
namespace {

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The first character boundary at or after `pos`.
size_t BoundaryAtOrAfter(std::string_view s, size_t pos) {
  while (pos < s.size() && IsContinuationByte(s[pos])) ++pos;
  return std::min(pos, s.size());
}

// Punctuation that closes a clause without needing a space after it (CJK commas and stops).
constexpr std::array<std::string_view, 9> kWideClauseMarks = {
    "\xEF\xBC\x8C", "\xE3\x80\x81", "\xEF\xBC\x9B", "\xEF\xBC\x9A", "\xE3\x80\x82",
    "\xEF\xBC\x81", "\xEF\xBC\x9F", "\xE2\x80\xA6", "\xEF\xBC\x8E"};  // ，、；：。！？…．

// Punctuation that ends a clause when a space follows.
bool IsClauseMark(std::string_view s, size_t pos, size_t* length) {
  const char c = s[pos];
  if (c == ';' || c == ':' || c == ',' || c == '.' || c == '!' || c == '?' || c == '-') {
    *length = 1;
    return true;
  }
  for (std::string_view dash :
       {std::string_view("\xE2\x80\x93"), std::string_view("\xE2\x80\x94")}) {
    if (s.substr(pos, dash.size()) == dash) {
      *length = dash.size();
      return true;
    }
  }
  return false;
}

// The best cut points in (begin, end], as the latest of each kind: after clause punctuation
// and the spaces that follow it, and after any run of spaces.
struct CutPoints {
  size_t clause = 0;
  size_t space = 0;
};

CutPoints FindCuts(std::string_view s, size_t begin, size_t end) {
  CutPoints cuts;
  for (size_t pos = begin; pos < end;) {
    size_t mark = 0;
    bool wide = false;
    for (std::string_view m : kWideClauseMarks) {
      if (s.substr(pos, m.size()) == m) {
        mark = m.size();
        wide = true;
        break;
      }
    }
    if (mark != 0 || IsClauseMark(s, pos, &mark)) {
      size_t after = pos + mark;
      const size_t space = SpaceLength(s, after);
      if (wide || space != 0) {
        while (size_t n = SpaceLength(s, after)) after += n;
        if (after <= end && after > begin) cuts.clause = after;
      }
      pos += mark;
      continue;
    }
    if (const size_t space = SpaceLength(s, pos)) {
      size_t after = pos + space;
      while (size_t n = SpaceLength(s, after)) after += n;
      if (after <= end && after < s.size()) cuts.space = after;
      pos = after;
      continue;
    }
    pos += CharLength(s, pos);
  }
  return cuts;
}

}  // namespace

std::vector<ByteRange> CutLongSentence(std::string_view sentence, int max_units,
                                       const std::function<int(std::string_view)>& units) {
  std::vector<ByteRange> parts;
  const auto fits = [&](size_t begin, size_t end) {
    return units(sentence.substr(begin, end - begin)) <= max_units;
  };
  size_t begin = 0;
  size_t guess = 64;  // bytes to probe first; then the last part's length
  while (begin < sentence.size()) {
    // Gallop to a fitting prefix end `fit` and a failing one `fail` (or the end, which fits),
    // then bisect between them: O(log n) calls of the callback per part.
    size_t fit = begin;
    size_t fail = sentence.size() + 1;
    size_t probe = BoundaryAtOrAfter(sentence, begin + std::max<size_t>(guess, 1));
    while (true) {
      if (probe <= fit) probe = BoundaryAtOrAfter(sentence, fit + 1);
      if (probe >= fail) break;
      if (fits(begin, probe)) {
        fit = probe;
        if (probe == sentence.size()) break;
        probe = BoundaryAtOrAfter(sentence, begin + 2 * (probe - begin));
      } else {
        fail = probe;
        break;
      }
    }
    while (fail <= sentence.size()) {
      const size_t mid = BoundaryAtOrAfter(sentence, fit + (fail - fit) / 2);
      const size_t next = mid <= fit ? BoundaryAtOrAfter(sentence, fit + 1) : mid;
      if (next >= fail) break;
      if (fits(begin, next)) {
        fit = next;
      } else {
        fail = next;
      }
    }
    size_t end = fit;
    if (end == begin) {
      end = BoundaryAtOrAfter(sentence, begin + 1);  // one character over the limit on its own
    } else if (end < sentence.size()) {
      // Back off to a clause end, else a space, when one leaves the part a fair share of what
      // fits; the callback confirms it, since token counts need not grow with every byte.
      const CutPoints cuts = FindCuts(sentence, begin, end);
      const size_t floor = begin + (end - begin) / 4;
      const size_t preferred = cuts.clause > floor  ? cuts.clause
                               : cuts.space > floor ? cuts.space
                                                    : 0;
      if (preferred > begin && preferred < end && fits(begin, preferred)) end = preferred;
    }
    parts.push_back({begin, end});
    guess = end - begin;
    begin = end;
  }
  return parts;
}

}  // namespace transerve::text
