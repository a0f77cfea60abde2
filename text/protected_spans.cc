// Protect / Unprotect: spans out of the text before the model, back into its translation after.
#include "text/protected_spans.h"

#include <algorithm>
#include <limits>
#include <map>

namespace transerve::text {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Positions of `stand_in` in `text`, not followed by a digit ("%1" is no copy of itself inside
// "%12").
std::vector<size_t> FindCopies(std::string_view text, std::string_view stand_in) {
  std::vector<size_t> at;
  for (size_t p = text.find(stand_in); p != std::string_view::npos;
       p = text.find(stand_in, p + 1)) {
    const size_t e = p + stand_in.size();
    if (e < text.size() && IsDigit(text[e])) continue;
    at.push_back(p);
  }
  return at;
}

// One change to a string: bytes [begin, end) become `text` (an insertion when begin == end).
struct Edit {
  size_t begin = 0;
  size_t end = 0;
  std::string text;
};

bool Overlaps(const std::vector<Edit>& edits, size_t begin, size_t end) {
  for (const Edit& e : edits) {
    if (e.begin == e.end) {
      if (begin < e.begin && e.begin < end) return true;  // an insertion inside
      continue;
    }
    if (begin < e.end && e.begin < end) return true;
  }
  return false;
}

// Edits sorted by position, an insertion before a replacement that starts where it is.
void SortEdits(std::vector<Edit>& edits) {
  std::stable_sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    return (a.end - a.begin) < (b.end - b.begin);
  });
}

std::string ApplyEdits(std::string_view s, const std::vector<Edit>& edits) {
  std::string out;
  size_t pos = 0;
  for (const Edit& e : edits) {
    out.append(s.substr(pos, e.begin - pos));
    out.append(e.text);
    pos = e.end;
  }
  out.append(s.substr(pos));
  return out;
}

// Where position `x` of the old string lands in the edited one. A token boundary inside a
// replaced range snaps outwards (a token inside a stand-in covers the span's bytes); at an
// insertion point a token's start moves after the inserted text and a token's end stays before.
size_t MapPosition(const std::vector<Edit>& edits, size_t x, bool is_end) {
  long long delta = 0;
  for (const Edit& e : edits) {
    const long long grow =
        static_cast<long long>(e.text.size()) - static_cast<long long>(e.end - e.begin);
    if (e.begin == e.end) {
      if (x > e.begin || (x == e.begin && !is_end)) {
        delta += grow;
        continue;
      }
      break;
    }
    if (x >= e.end) {
      delta += grow;
      continue;
    }
    if (x <= e.begin) break;
    const size_t start = static_cast<size_t>(static_cast<long long>(e.begin) + delta);
    return is_end ? start + e.text.size() : start;
  }
  return static_cast<size_t>(static_cast<long long>(x) + delta);
}

void MapRanges(const std::vector<Edit>& edits, std::vector<ByteRange>& ranges) {
  for (ByteRange& r : ranges) {
    if (r.begin >= r.end) {
      r.begin = r.end = MapPosition(edits, r.begin, false);
      continue;
    }
    r = {MapPosition(edits, r.begin, false), MapPosition(edits, r.end, true)};
  }
}

bool IsClosingPunctuation(char c) {
  return std::string_view(".,;:!?)]}\"'").find(c) != std::string_view::npos;
}

// A duplicate copy's range widened by one space, so "a %1 b %1." becomes "a %1 b." around it.
ByteRange WithOneSpace(std::string_view s, size_t begin, size_t end,
                       const std::vector<Edit>& taken) {
  const bool space_before = begin > 0 && IsSpace(s[begin - 1]);
  const bool space_after = end < s.size() && IsSpace(s[end]);
  const bool closes = end >= s.size() || space_after || IsClosingPunctuation(s[end]);
  if (space_before && closes && !Overlaps(taken, begin - 1, end)) return {begin - 1, end};
  if (space_after && !Overlaps(taken, begin, end + 1)) return {begin, end + 1};
  return {begin, end};
}

// A point at the very end moves before the sentence's final punctuation.
size_t BeforeFinalPunctuation(std::string_view s, size_t x) {
  if (x != s.size()) return x;
  while (x > 0 && std::string_view(".!?:;").find(s[x - 1]) != std::string_view::npos) --x;
  return x;
}

// "% 1", "%-1", "(%1)": a '%' with the stand-in's number within the next 3 bytes.
bool HoldsAlteredStandIn(std::string_view words, std::string_view model_text, ByteRange s) {
  const std::string_view digits = model_text.substr(s.begin + 1, s.end - s.begin - 1);
  for (size_t p = words.find('%'); p != std::string_view::npos; p = words.find('%', p + 1)) {
    const size_t at = words.find(digits, p + 1);
    if (at != std::string_view::npos && at <= p + 3) return true;
  }
  return false;
}

bool InsideTakenRange(const std::vector<Edit>& taken, size_t x, size_t* begin) {
  for (const Edit& e : taken) {
    if (e.begin < x && x < e.end) {
      *begin = e.begin;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string StandIn(int n) {
  std::string s(1, '%');
  s.append(std::to_string(n));
  return s;
}

ProtectedText Protect(std::string_view text, const ProtectOptions& options) {
  ProtectedText p;
  p.original = std::string(text);
  p.spans = FindProtectedSpans(text, options);
  // A span glued to a digit cannot have a numbered stand-in: "%1" then "1" would read as "%11".
  // It goes to the model as it is (unprotected), the rare price of numbered stand-ins.
  std::erase_if(p.spans, [&](const ProtectedSpan& span) {
    return span.kind != SpanKind::kGlossaryTerm && span.range.end < text.size() &&
           IsDigit(text[span.range.end]);
  });
  int n = 0;
  size_t pos = 0;
  for (const ProtectedSpan& span : p.spans) {
    // A glossary term's stand-in is its target term: the model reads a word where a word was
    // (a placeholder there costs the words around it: docs/text.md) and copies it.
    std::string stand_in = span.target;
    if (span.kind != SpanKind::kGlossaryTerm) {
      // A number whose stand-in the text already holds would be taken for a copy of it.
      do {
        stand_in = StandIn(++n);
      } while (!FindCopies(text, stand_in).empty());
    }
    p.model_text.append(text.substr(pos, span.range.begin - pos));
    p.stand_ins.push_back({p.model_text.size(), p.model_text.size() + stand_in.size()});
    p.model_text.append(stand_in);
    pos = span.range.end;
  }
  p.model_text.append(text.substr(pos));
  return p;
}

AlignedTranslation Unprotect(const ProtectedText& p, AlignedTranslation t) {
  const bool aligned_to_us = t.source == p.model_text;
  if (!aligned_to_us) {
    t.source_tokens.clear();
    t.weights.clear();
    t.hard.clear();
  }
  const std::string_view target = t.target;
  auto span_bytes = [&](size_t i) {
    const ByteRange r = p.spans[i].range;
    return p.original.substr(r.begin, r.end - r.begin);
  };
  // What the translation holds for span i: a glossary term's target, else its own bytes.
  auto span_target = [&](size_t i) {
    return p.spans[i].kind == SpanKind::kGlossaryTerm ? p.spans[i].target : span_bytes(i);
  };

  std::vector<Edit> edits;
  std::vector<size_t> missing;
  // Copies of word stand-ins (glossary targets) already taken by an earlier span.
  std::map<std::string_view, size_t> words_taken;
  for (size_t i = 0; i < p.spans.size(); ++i) {
    const ByteRange s = p.stand_ins[i];
    const std::string_view stand_in =
        std::string_view(p.model_text).substr(s.begin, s.end - s.begin);
    if (p.spans[i].kind == SpanKind::kGlossaryTerm) {
      // The model saw the target term itself: each copy it wrote (alone, or inside a longer
      // word it made of it: a compound, an inflection) stands for one occurrence; one without
      // a copy goes in where the alignment says.
      size_t& taken = words_taken[stand_in];
      if (taken < FindCopies(target, stand_in).size()) {
        ++taken;
      } else {
        missing.push_back(i);
      }
      continue;
    }
    const std::vector<size_t> copies = FindCopies(target, stand_in);
    if (copies.empty()) {
      missing.push_back(i);
      continue;
    }
    size_t keep = 0;
    if (copies.size() > 1) {
      const ByteRange want = MapSourceRange(t, s);
      auto distance = [&](size_t c) { return c > want.begin ? c - want.begin : want.begin - c; };
      for (size_t k = 1; k < copies.size(); ++k) {
        if (distance(copies[k]) < distance(copies[keep])) keep = k;
      }
    }
    edits.push_back({copies[keep], copies[keep] + stand_in.size(), span_target(i)});
    for (size_t k = 0; k < copies.size(); ++k) {
      if (k == keep) continue;
      const ByteRange r = WithOneSpace(target, copies[k], copies[k] + stand_in.size(), edits);
      edits.push_back({r.begin, r.end, ""});
    }
  }

  for (size_t i : missing) {
    const ByteRange r =
        aligned_to_us ? MapSourceRange(t, p.stand_ins[i]) : ByteRange{target.size(), target.size()};
    const std::string_view words = target.substr(r.begin, r.end - r.begin);
    if (!r.empty() && HoldsAlteredStandIn(words, p.model_text, p.stand_ins[i]) &&
        !Overlaps(edits, r.begin, r.end)) {
      // The model altered the stand-in ("% 1", "%l"): the span takes its place.
      edits.push_back({r.begin, r.end, span_target(i)});
      continue;
    }
    size_t x = BeforeFinalPunctuation(target, r.begin);
    size_t taken_begin = 0;
    if (InsideTakenRange(edits, x, &taken_begin)) x = taken_begin;
    std::string text;
    if (x > 0 && !IsSpace(target[x - 1])) text.push_back(' ');
    text.append(span_target(i));
    if (x < target.size() && !IsSpace(target[x]) && !IsClosingPunctuation(target[x])) {
      text.push_back(' ');
    }
    edits.push_back({x, x, std::move(text)});
  }
  SortEdits(edits);

  std::string new_target = ApplyEdits(target, edits);
  MapRanges(edits, t.target_tokens);
  t.target = std::move(new_target);

  if (aligned_to_us) {
    std::vector<Edit> source_edits;
    for (size_t i = 0; i < p.spans.size(); ++i) {
      source_edits.push_back({p.stand_ins[i].begin, p.stand_ins[i].end, span_bytes(i)});
    }
    MapRanges(source_edits, t.source_tokens);
  }
  t.source = p.original;
  return t;
}

}  // namespace transerve::text
