#include "text/marked_text.h"

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>

#include "text/utf8_chars.h"

namespace transerve::text {
namespace {

bool IsSpaceChar(UChar32 c) { return c >= 0 && u_isUWhiteSpace(c); }

bool InsideWord(std::string_view s, size_t pos) {
  return IsWordChar(CharBefore(s, pos)) && IsWordChar(CharAt(s, pos));
}

size_t WordStart(std::string_view s, size_t pos) {
  while (pos > 0 && InsideWord(s, pos)) pos = PrevChar(s, pos);
  return pos;
}

size_t WordEnd(std::string_view s, size_t pos) {
  while (pos < s.size() && InsideWord(s, pos)) pos = NextChar(s, pos);
  return pos;
}

// Whitespace characters from `pos` forward (up to `limit`), or back (down to `limit`).
size_t SpaceAfter(std::string_view s, size_t pos, size_t limit) {
  size_t n = 0;
  while (pos < limit && IsSpaceChar(CharAt(s, pos))) {
    pos = NextChar(s, pos);
    ++n;
  }
  return n;
}

size_t SpaceBefore(std::string_view s, size_t pos, size_t limit) {
  size_t n = 0;
  while (pos > limit && IsSpaceChar(CharBefore(s, pos))) {
    pos = PrevChar(s, pos);
    ++n;
  }
  return n;
}

size_t SkipSpace(std::string_view s, size_t pos, size_t limit, size_t max_chars) {
  for (size_t n = 0; n < max_chars && pos < limit && IsSpaceChar(CharAt(s, pos)); ++n) {
    pos = NextChar(s, pos);
  }
  return pos;
}

size_t SkipSpaceBack(std::string_view s, size_t pos, size_t limit, size_t max_chars) {
  for (size_t n = 0; n < max_chars && pos > limit && IsSpaceChar(CharBefore(s, pos)); ++n) {
    pos = PrevChar(s, pos);
  }
  return pos;
}

// Where a tag goes in the target: [begin, end), a point for a void or empty tag.
struct Placement {
  size_t begin = 0;
  size_t end = 0;
  int tag = -1;
};

class TagPlacer {
 public:
  TagPlacer(const MarkedText& m, const AlignedTranslation& t) : m_(m), t_(t) {
    aligned_ = t.has_alignment();
    if (aligned_) hard_ = HardAlignment(t);
    const size_t n = m.tags.size();
    ranges_.resize(n);
    children_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      ByteRange r = m.tags[i].range;
      r.end = std::min(r.end, src().size());
      r.begin = std::min(r.begin, r.end);
      int p = m.tags[i].parent;
      // A parent that does not come first or does not hold the tag: the tag goes to the top,
      // clamped there, so that bad input still gives every tag exactly once.
      if (p >= static_cast<int>(i) || p < -1) p = -1;
      if (p >= 0) {
        const ByteRange& pr = ranges_[p];
        r.begin = std::clamp(r.begin, pr.begin, pr.end);
        r.end = std::clamp(r.end, r.begin, pr.end);
      }
      ranges_[i] = r;
      (p < 0 ? roots_ : children_[p]).push_back(static_cast<int>(i));
    }
  }

  std::string Insert(const EscapeFn& escape) {
    std::string out;
    Emit(roots_, 0, src().size(), 0, tgt().size(), escape, &out);
    return out;
  }

 private:
  std::string_view src() const { return m_.text; }
  std::string_view tgt() const { return t_.target; }

  // A source point inside a word or token that came through unchanged (a name, a number,
  // H2O) maps to the same offset inside its translation; otherwise `fallback`.
  size_t InsideWordPoint(size_t p, size_t fallback) const {
    if (!aligned_) return fallback;
    ByteRange unit{WordStart(src(), p), WordEnd(src(), p)};
    for (const ByteRange& tok : t_.source_tokens) {
      if (tok.begin < p && p < tok.end) {
        unit.begin = std::min(unit.begin, WordStart(src(), tok.begin));
        unit.end = std::max(unit.end, WordEnd(src(), tok.end));
        break;
      }
    }
    if (unit.begin >= p || unit.end <= p) return fallback;
    const ByteRange to = MapSourceRange(t_, hard_, unit);
    if (to.empty() || tgt().substr(to.begin, to.end - to.begin) !=
                          src().substr(unit.begin, unit.end - unit.begin)) {
      return fallback;
    }
    return to.begin + (p - unit.begin);
  }

  // The nearest word boundary of the target to the same relative place in [lo, hi).
  size_t Proportional(size_t p, size_t sb, size_t se, size_t lo, size_t hi) const {
    if (se <= sb || hi <= lo) return lo;
    const double f = static_cast<double>(p - sb) / static_cast<double>(se - sb);
    size_t q = lo + static_cast<size_t>(f * static_cast<double>(hi - lo) + 0.5);
    q = std::min(q, hi);
    while (q > lo && (static_cast<unsigned char>(tgt()[q]) & 0xC0) == 0x80) --q;
    const size_t back = std::max(lo, WordStart(tgt(), q)), fwd = std::min(hi, WordEnd(tgt(), q));
    return q - back <= fwd - q ? back : fwd;
  }

  // Words [cb, ce) of the source at the same relative place in [lo, hi): from a word start to a
  // word end, at least one word where the window has one.
  void ProportionalSpan(size_t cb, size_t ce, size_t sb, size_t se, size_t lo, size_t hi, size_t* b,
                        size_t* e) const {
    *b = SkipSpace(tgt(), Proportional(cb, sb, se, lo, hi), hi, SIZE_MAX);
    *e = SkipSpaceBack(tgt(), Proportional(ce, sb, se, lo, hi), lo, SIZE_MAX);
    if (*e <= *b) *e = std::min(hi, WordEnd(tgt(), *b));
    if (*e <= *b && *b < hi) *e = NextChar(tgt(), *b);  // punctuation: one character
    *b = std::clamp(*b, lo, hi);
    *e = std::clamp(*e, *b, hi);
  }

  // Places a point in the whitespace run around target point q as the source point p sits in
  // its own: right after the word, right before the next one, or that many spaces in.
  size_t SnapPoint(size_t q, size_t p, size_t sb, size_t se, size_t lo, size_t hi) const {
    const size_t before = SpaceBefore(src(), p, sb), after = SpaceAfter(src(), p, se);
    const size_t run_begin = SkipSpaceBack(tgt(), q, lo, SIZE_MAX);
    const size_t run_end = SkipSpace(tgt(), q, hi, SIZE_MAX);
    if (before == 0) return run_begin;
    if (after == 0) return run_end;
    return SkipSpace(tgt(), run_begin, run_end, before);
  }

  Placement PlacePoint(int tag, size_t p, size_t sb, size_t se, size_t lo, size_t hi) const {
    const size_t first = SkipSpace(src(), sb, se, SIZE_MAX);
    const size_t last = SkipSpaceBack(src(), se, first, SIZE_MAX);
    size_t q;
    if (p <= first) {
      q = lo;
    } else if (p >= last) {
      q = hi;
    } else {
      q = aligned_ ? MapSourcePoint(t_, hard_, p) : Proportional(p, sb, se, lo, hi);
      q = InsideWordPoint(p, q);
      if (q < lo || q > hi) q = Proportional(p, sb, se, lo, hi);
    }
    q = SnapPoint(q, p, sb, se, lo, hi);
    return {q, q, tag};
  }

  Placement Place(int tag, size_t sb, size_t se, size_t lo, size_t hi) const {
    const ByteRange r = ranges_[tag];
    // The words it wraps, without the whitespace at its edges.
    const size_t cb = SkipSpace(src(), r.begin, r.end, SIZE_MAX);
    const size_t ce = SkipSpaceBack(src(), r.end, cb, SIZE_MAX);
    if (m_.tags[tag].is_void()) return PlacePoint(tag, r.begin, sb, se, lo, hi);
    if (cb >= ce) {
      // Only whitespace inside: at its point, around as much of the target's whitespace there.
      Placement p = PlacePoint(tag, r.begin, sb, se, lo, hi);
      p.end = SkipSpace(tgt(), p.begin, hi, SpaceAfter(src(), r.begin, r.end));
      return p;
    }
    const size_t first = SkipSpace(src(), sb, se, SIZE_MAX);
    const size_t last = SkipSpaceBack(src(), se, first, SIZE_MAX);
    const size_t tfirst = SkipSpace(tgt(), lo, hi, SIZE_MAX);
    const size_t tlast = SkipSpaceBack(tgt(), hi, tfirst, SIZE_MAX);
    size_t b, e;
    if (cb <= first && ce >= last) {
      // All the words of its parent: all the words of the parent's translation.
      b = tfirst;
      e = tlast;
    } else if (aligned_) {
      const ByteRange to = MapSourceRange(t_, hard_, {cb, ce});
      b = InsideWordPoint(cb, to.begin);
      e = InsideWordPoint(ce, to.end);
      if (to.empty() && b >= e) {
        // Nothing aligns: an empty tag at the mapped point.
        Placement p = PlacePoint(tag, r.begin, sb, se, lo, hi);
        return p;
      }
    } else {
      ProportionalSpan(cb, ce, sb, se, lo, hi, &b, &e);
    }
    if (b < lo || e > hi || e <= b) {
      // The alignment put the words outside the parent: the same relative place inside it.
      ProportionalSpan(cb, ce, sb, se, lo, hi, &b, &e);
    }
    // The whitespace just inside the tag in the source, kept inside it where the target has it.
    b = SkipSpaceBack(tgt(), b, lo, SpaceAfter(src(), r.begin, cb));
    e = SkipSpace(tgt(), e, hi, SpaceBefore(src(), r.end, ce));
    return {b, e, tag};
  }

  // Siblings in target order, none overlapping another: where the alignment makes them cross,
  // the earlier one ends where the later begins, or the later starts after the earlier.
  std::vector<Placement> PlaceSiblings(const std::vector<int>& tags, size_t sb, size_t se,
                                       size_t lo, size_t hi) const {
    std::vector<Placement> placed;
    for (int tag : tags) placed.push_back(Place(tag, sb, se, lo, hi));
    std::stable_sort(placed.begin(), placed.end(), [](const Placement& a, const Placement& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    for (size_t i = 1; i < placed.size(); ++i) {
      Placement& prev = placed[i - 1];
      Placement& cur = placed[i];
      if (cur.begin >= prev.end) continue;
      const bool point = cur.begin == cur.end;
      if (!point && prev.begin < cur.begin) {
        prev.end = std::max(prev.begin, SkipSpaceBack(tgt(), cur.begin, prev.begin, SIZE_MAX));
      } else {
        cur.begin =
            point ? prev.end : SkipSpace(tgt(), prev.end, std::max(prev.end, cur.end), SIZE_MAX);
        cur.end = std::max(cur.end, cur.begin);
      }
    }
    return placed;
  }

  void Emit(const std::vector<int>& tags, size_t sb, size_t se, size_t lo, size_t hi,
            const EscapeFn& escape, std::string* out) const {
    size_t pos = lo;
    for (const Placement& p : PlaceSiblings(tags, sb, se, lo, hi)) {
      const InlineTag& tag = m_.tags[p.tag];
      out->append(escape(tgt().substr(pos, p.begin - pos)));
      out->append(tag.open);
      if (!tag.is_void()) {
        const ByteRange& r = ranges_[p.tag];
        Emit(children_[p.tag], r.begin, r.end, p.begin, p.end, escape, out);
        out->append(tag.close);
      }
      pos = p.end;
    }
    out->append(escape(tgt().substr(pos, hi - pos)));
  }

  const MarkedText& m_;
  const AlignedTranslation& t_;
  bool aligned_ = false;
  std::vector<int> hard_;  // HardAlignment(t_), once
  std::vector<ByteRange> ranges_;
  std::vector<std::vector<int>> children_;
  std::vector<int> roots_;
};

}  // namespace

std::string InsertTags(const MarkedText& source, const AlignedTranslation& t,
                       const EscapeFn& escape) {
  return TagPlacer(source, t).Insert(escape);
}

}  // namespace transerve::text
