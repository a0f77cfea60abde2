#include "text/html_document.h"

#include <gumbo.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "text/html_source_text.h"

// How the source is cut (all positions are gumbo's pointers into the input):
// - a block's children are read in runs of inline content; each run with text is a unit whose
//   source bytes [begin, end) Render replaces by the unit's translation, so all else is copied;
// - inside a run, inline elements are tags (their own start and end tag bytes); an end tag the
//   source omitted is written `</name>` after the translation's words and dropped again where it
//   stands at the end of the unit or just before another end tag (where the source left it out);
// - void elements, comments, untranslated inline elements (code, script, translate="no", ...),
//   and bytes gumbo put in no node of the run (a stray end tag, a doctype) are void tags holding
//   their source bytes, so the model never sees them and they come back unchanged;
// - `<x/>` of an element HTML does not know as void (an XML fragment's <ph/>) is a void tag:
//   gumbo would otherwise wrap the rest of the block in it;
// - where gumbo's tree does not follow the source order (misnested formatting elements the
//   adoption agency moved or cloned), the run is copied untranslated.

namespace transerve::text {
namespace {

using html::Escape;
using html::HasTagStart;
using html::LearnSpellings;
using html::Spellings;
using html::SplitMergedText;
using html::TextPart;

constexpr int kMaxDepth = 256;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool IsAsciiSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

bool IsBlank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return IsAsciiSpace(c); });
}

bool IsVoidName(std::string_view n) {
  static const char* const kVoid[] = {"area",  "base",   "br",    "col",  "embed",
                                      "hr",    "img",    "input", "link", "meta",
                                      "param", "source", "track", "wbr",  "keygen"};
  return std::find(std::begin(kVoid), std::end(kVoid), n) != std::end(kVoid);
}

// Inline elements lift out into tags; any element gumbo does not know is inline too.
bool IsInlineName(std::string_view n) {
  static const char* const kInline[] = {
      "a",      "abbr",  "b",      "bdi",   "bdo", "big",  "cite",    "code", "data",
      "del",    "dfn",   "em",     "font",  "i",   "ins",  "kbd",     "mark", "nobr",
      "q",      "rp",    "rt",     "ruby",  "s",   "samp", "small",   "span", "strike",
      "strong", "sub",   "sup",    "time",  "tt",  "u",    "var",     "br",   "img",
      "wbr",    "input", "script", "style", "svg", "math", "noscript"};
  return std::find(std::begin(kInline), std::end(kInline), n) != std::end(kInline);
}

// Elements whose content is never translated.
bool IsRawName(std::string_view n) {
  static const char* const kRaw[] = {"script", "style",     "pre",      "textarea", "code",
                                     "svg",    "math",      "template", "iframe",   "object",
                                     "xmp",    "plaintext", "noscript", "noembed",  "noframes"};
  return std::find(std::begin(kRaw), std::end(kRaw), n) != std::end(kRaw);
}

bool IsTranslatableAttribute(std::string_view n) {
  return n == "title" || n == "alt" || n == "placeholder" || n == "aria-label";
}

bool IsElement(const GumboNode* n) {
  return n->type == GUMBO_NODE_ELEMENT || n->type == GUMBO_NODE_TEMPLATE;
}

const GumboVector& Children(const GumboNode* n) { return n->v.element.children; }

// The tag name as the source spelled it, lower-cased ("x:g" for <x:g id="1">).
std::string TagName(const GumboElement& e) {
  if (e.tag != GUMBO_TAG_UNKNOWN) return gumbo_normalized_tagname(e.tag);
  GumboStringPiece p = e.original_tag;
  if (p.length == 0) return "";
  gumbo_tag_from_original_text(&p);
  return Lower(std::string_view(p.data, p.length));
}

// The end tag to write for an element whose end tag the source omitted: the name as spelled.
std::string SynthesizedClose(const GumboElement& e) {
  GumboStringPiece p = e.original_tag;
  if (p.length == 0) return "</" + TagName(e) + ">";
  gumbo_tag_from_original_text(&p);
  return "</" + std::string(p.data, p.length) + ">";
}

bool HasNoTranslate(const GumboElement& e) {
  const GumboAttribute* t = gumbo_get_attribute(&e.attributes, "translate");
  if (t != nullptr) {
    std::string_view v = t->value;
    while (!v.empty() && IsAsciiSpace(v.front())) v.remove_prefix(1);
    while (!v.empty() && IsAsciiSpace(v.back())) v.remove_suffix(1);
    if (Lower(v) == "no") return true;
  }
  const GumboAttribute* c = gumbo_get_attribute(&e.attributes, "class");
  if (c == nullptr) return false;
  const std::string_view classes = c->value;
  size_t i = 0;
  while (i < classes.size()) {
    while (i < classes.size() && IsAsciiSpace(classes[i])) ++i;
    size_t j = i;
    while (j < classes.size() && !IsAsciiSpace(classes[j])) ++j;
    if (classes.substr(i, j - i) == "notranslate") return true;
    i = j;
  }
  return false;
}

// A tag of a block unit as Render needs it back: whether its end tag was made up, and which
// attribute units sit inside its start tag (at which bytes of it).
struct TagInfo {
  bool synthesized_close = false;
  // The tag that followed the made-up end tag's place in the source with no text between (the
  // start tag that closed it, as a second <a> closes the first); -1 for none.
  int follower = -1;
  bool newline_before = false;  // a <br> that put a '\n' into the unit's text before it
  std::vector<std::pair<size_t, ByteRange>> attributes;  // unit index, bytes within `open`
};

struct UnitInfo {
  ByteRange range;  // in the input
  bool attribute = false;
  char quote = 0;       // the attribute's quote character, 0 when unquoted
  bool nested = false;  // an attribute in a start tag of a block unit (rendered by that unit)
  std::vector<TagInfo> tags;
};

// What parsing found: the units and how to write them back.
struct Parsed {
  std::vector<MarkedText> units;
  std::vector<UnitInfo> info;
  Spellings text_spellings, attribute_spellings;
};

class Builder {
 public:
  Builder(std::string_view src, Parsed* impl, const std::vector<std::string>& untranslated)
      : src_(src), impl_(impl), untranslated_(untranslated) {}

  bool DepthOk(const GumboNode* n, int depth) const {
    if (depth > kMaxDepth) return false;
    if (!IsElement(n)) return true;
    const GumboVector& c = Children(n);
    for (unsigned i = 0; i < c.length; ++i) {
      if (!DepthOk(static_cast<const GumboNode*>(c.data[i]), depth + 1)) return false;
    }
    return true;
  }

  void LearnAll(const GumboNode* n) {
    if (n->type == GUMBO_NODE_TEXT || n->type == GUMBO_NODE_WHITESPACE) {
      const GumboText& t = n->v.text;
      const std::string_view original(t.original_text.data, t.original_text.length);
      if (original.find('<') != std::string_view::npos) {
        for (const TextPart& p : SplitMergedText(original, t.text)) {
          if (!p.markup) {
            LearnSpellings(original.substr(p.begin, p.end - p.begin), p.decoded,
                           &impl_->text_spellings);
          }
        }
      }
      LearnSpellings(original, t.text, &impl_->text_spellings);
      return;
    }
    if (!IsElement(n) || IsRaw(n)) return;  // script text says nothing of how text is escaped
    const GumboVector& attrs = n->v.element.attributes;
    for (unsigned i = 0; i < attrs.length; ++i) {
      const auto* a = static_cast<const GumboAttribute*>(attrs.data[i]);
      std::string_view v(a->original_value.data, a->original_value.length);
      if (!v.empty() && (v.front() == '"' || v.front() == '\'')) {
        v = v.substr(1, v.size() >= 2 ? v.size() - 2 : 0);
      }
      LearnSpellings(v, a->value, &impl_->attribute_spellings);
    }
    const GumboVector& c = Children(n);
    for (unsigned i = 0; i < c.length; ++i) LearnAll(static_cast<const GumboNode*>(c.data[i]));
  }

  // The children of a block (or of the fragment), cut into runs of inline content.
  void Block(const GumboNode* n) {
    std::vector<const GumboNode*> run;
    const GumboVector& c = Children(n);
    for (unsigned i = 0; i < c.length; ++i) {
      const auto* child = static_cast<const GumboNode*>(c.data[i]);
      if (IsInlineContent(child)) {
        run.push_back(child);
        continue;
      }
      Run(run);
      run.clear();
      // (An untranslated <textarea placeholder="..."> too, unless it is translate="no".)
      Attributes(child, /*tag=*/nullptr);
      if (!IsRaw(child)) Block(child);
    }
    Run(run);
  }

  // Drops units whose bytes overlap an earlier one (a tree gumbo reordered).
  void Finish() {
    std::vector<size_t> keep;
    std::map<size_t, size_t> taken;  // begin -> end of the units kept
    for (size_t u = 0; u < candidates_.size(); ++u) {
      const Candidate& c = candidates_[u];
      if (c.parent != -1) continue;  // nested in a block unit, or no unit
      const ByteRange r = c.info.range;
      auto after = taken.lower_bound(r.begin);
      if (after != taken.end() && after->first < r.end) continue;
      if (after != taken.begin() && std::prev(after)->second > r.begin) continue;
      taken.emplace(r.begin, r.end);
      keep.push_back(u);
    }
    std::sort(keep.begin(), keep.end());
    std::vector<int> index(candidates_.size(), -1);
    // Nested attribute units follow their block unit.
    for (size_t u : keep) {
      index[u] = static_cast<int>(impl_->units.size());
      impl_->units.push_back(candidates_[u].text);
      impl_->info.push_back(candidates_[u].info);
      for (size_t a : candidates_[u].nested) {
        index[a] = static_cast<int>(impl_->units.size());
        impl_->units.push_back(candidates_[a].text);
        impl_->info.push_back(candidates_[a].info);
      }
    }
    for (UnitInfo& info : impl_->info) {
      for (TagInfo& t : info.tags) {
        for (auto& [unit, bytes] : t.attributes) unit = static_cast<size_t>(index[unit]);
      }
    }
  }

 private:
  struct Candidate {
    MarkedText text;
    UnitInfo info;
    int parent = -1;
    std::vector<size_t> nested;
  };

  size_t Offset(const char* p) const { return static_cast<size_t>(p - src_.data()); }
  bool InSource(const GumboStringPiece& p) const {
    return p.length > 0 && p.data >= src_.data() && p.data + p.length <= src_.data() + src_.size();
  }

  // The start tag's bytes, unless the parser made the element up or copied it.
  bool OwnsStartTag(const GumboNode* n) const {
    return IsElement(n) && !(n->parse_flags & GUMBO_INSERTION_BY_PARSER) &&
           InSource(n->v.element.original_tag);
  }
  bool OwnsEndTag(const GumboNode* n) const {
    return IsElement(n) && !(n->parse_flags & GUMBO_INSERTION_IMPLICIT_END_TAG) &&
           InSource(n->v.element.original_end_tag);
  }

  bool SelfClosing(const GumboNode* n) const {
    const GumboStringPiece& t = n->v.element.original_tag;
    return OwnsStartTag(n) && t.length >= 2 && t.data[t.length - 2] == '/' &&
           !IsVoidName(TagName(n->v.element));
  }

  // translate="no", class="notranslate", or a name the caller listed.
  bool Untranslated(const GumboElement& e) const {
    if (HasNoTranslate(e)) return true;
    if (untranslated_.empty()) return false;
    const std::string name = TagName(e);
    return std::find(untranslated_.begin(), untranslated_.end(), name) != untranslated_.end();
  }

  bool IsRaw(const GumboNode* n) const {
    return IsElement(n) && (IsRawName(TagName(n->v.element)) || Untranslated(n->v.element));
  }

  bool IsInlineContent(const GumboNode* n) {
    if (!IsElement(n)) return true;  // text, whitespace, comment, CDATA
    const auto it = inline_memo_.find(n);
    if (it != inline_memo_.end()) return it->second;
    const std::string name = TagName(n->v.element);
    const bool known = n->v.element.tag != GUMBO_TAG_UNKNOWN;
    bool is_inline = !known || IsInlineName(name);
    if (is_inline && !IsRaw(n)) {
      const GumboVector& c = Children(n);
      for (unsigned i = 0; i < c.length && is_inline; ++i) {
        is_inline = IsInlineContent(static_cast<const GumboNode*>(c.data[i]));
      }
    }
    inline_memo_[n] = is_inline;
    return is_inline;
  }

  // The source bytes of a node and all it holds (the bytes it owns, not the parser's copies).
  void Span(const GumboNode* n, size_t* begin, size_t* end) const {
    auto add = [&](const GumboStringPiece& p) {
      if (!InSource(p)) return;
      *begin = std::min(*begin, Offset(p.data));
      *end = std::max(*end, Offset(p.data) + p.length);
    };
    if (!IsElement(n)) {
      add(n->v.text.original_text);
      return;
    }
    if (OwnsStartTag(n)) add(n->v.element.original_tag);
    if (OwnsEndTag(n)) add(n->v.element.original_end_tag);
    const GumboVector& c = Children(n);
    for (unsigned i = 0; i < c.length; ++i)
      Span(static_cast<const GumboNode*>(c.data[i]), begin, end);
  }

  // Translatable attributes of an element's start tag: units of their own. `tag` is the tag's
  // info when the element is a tag of the run being built (the unit is then nested in it).
  void Attributes(const GumboNode* n, TagInfo* tag) {
    if (!OwnsStartTag(n) || Untranslated(n->v.element)) return;
    const GumboElement& e = n->v.element;
    const size_t tag_begin = Offset(e.original_tag.data);
    const size_t tag_end = tag_begin + e.original_tag.length;
    const GumboVector& attrs = e.attributes;
    for (unsigned i = 0; i < attrs.length; ++i) {
      const auto* a = static_cast<const GumboAttribute*>(attrs.data[i]);
      if (!IsTranslatableAttribute(Lower(a->name)) || IsBlank(a->value) ||
          !InSource(a->original_value)) {
        continue;
      }
      size_t b = Offset(a->original_value.data), en = b + a->original_value.length;
      if (b < tag_begin || en > tag_end) continue;
      char quote = src_[b];
      if (quote == '"' || quote == '\'') {
        if (en - b < 2 || src_[en - 1] != quote) continue;
        ++b;
        --en;
      } else {
        quote = 0;
      }
      Candidate c;
      c.text.text = a->value;
      c.info.range = {b, en};
      c.info.attribute = true;
      c.info.quote = quote;
      const size_t index = candidates_.size();
      if (tag != nullptr) {
        c.parent = static_cast<int>(pending_run_);
        c.info.nested = true;
        tag->attributes.push_back({index, {b - tag_begin, en - tag_begin}});
        run_attributes_.push_back(index);
      }
      candidates_.push_back(std::move(c));
    }
  }

  // Building one run.
  struct RunState {
    MarkedText text;
    std::vector<TagInfo> tags;
    std::vector<int> open;               // stack of tag indices
    std::vector<int> awaiting_follower;  // tags whose made-up end tag was just written
    size_t cursor = 0;
    bool ok = true;
  };

  int NewTag(RunState* s, std::string open, size_t at) {
    InlineTag tag;
    tag.range = {at, at};
    tag.open = std::move(open);
    tag.parent = s->open.empty() ? -1 : s->open.back();
    s->text.tags.push_back(std::move(tag));
    s->tags.emplace_back();
    const int index = static_cast<int>(s->text.tags.size()) - 1;
    for (int t : s->awaiting_follower) {
      if (s->text.tags[t].range.end == at) s->tags[t].follower = index;
    }
    s->awaiting_follower.clear();
    return index;
  }

  // Bytes between the last node and the next that no node of the run holds: a void tag.
  void Gap(RunState* s, size_t to) {
    if (to < s->cursor) {
      s->ok = false;
      return;
    }
    if (to > s->cursor) {
      NewTag(s, std::string(src_.substr(s->cursor, to - s->cursor)), s->text.text.size());
      s->cursor = to;
    }
  }

  void VoidBytes(RunState* s, size_t begin, size_t end) {
    Gap(s, begin);
    if (!s->ok || end <= begin) return;
    NewTag(s, std::string(src_.substr(begin, end - begin)), s->text.text.size());
    s->cursor = end;
  }

  void Node(RunState* s, const GumboNode* n) {
    if (!s->ok) return;
    if (n->type == GUMBO_NODE_TEXT || n->type == GUMBO_NODE_WHITESPACE) {
      const GumboStringPiece& o = n->v.text.original_text;
      if (!InSource(o)) return;
      const std::string_view original(o.data, o.length);
      if (original.find('<') != std::string_view::npos) {
        const std::vector<TextPart> parts = SplitMergedText(original, n->v.text.text);
        for (const TextPart& p : parts) {
          if (p.markup) {
            VoidBytes(s, Offset(o.data) + p.begin, Offset(o.data) + p.end);
          } else {
            Gap(s, Offset(o.data) + p.begin);
            s->text.text += p.decoded;
            s->cursor = Offset(o.data) + p.end;
          }
        }
        if (!parts.empty()) return;
        // Markup in it that cannot be told from its text: the run is copied as it is.
        if (HasTagStart(original)) {
          s->ok = false;
          return;
        }
      }
      Gap(s, Offset(o.data));
      s->text.text += n->v.text.text;
      s->cursor = Offset(o.data) + o.length;
      return;
    }
    if (!IsElement(n)) {  // comment, CDATA
      const GumboStringPiece& o = n->v.text.original_text;
      if (InSource(o)) VoidBytes(s, Offset(o.data), Offset(o.data) + o.length);
      return;
    }
    const GumboElement& e = n->v.element;
    const GumboVector& c = Children(n);
    if (IsRaw(n)) {
      // Untranslated inside a sentence: one void tag holding all its bytes.
      size_t b = SIZE_MAX, en = 0;
      Span(n, &b, &en);
      if (b < en) VoidBytes(s, b, en);
      // Its start tag's title still is translated: the void tag starts with it.
      if (s->ok && b < en && OwnsStartTag(n) && Offset(e.original_tag.data) == b) {
        Attributes(n, &s->tags.back());
      }
      return;
    }
    if (OwnsStartTag(n) && (IsVoidName(TagName(e)) || SelfClosing(n))) {
      const size_t b = Offset(e.original_tag.data);
      Gap(s, b);
      if (!s->ok) return;
      // A <br> right after a word is a line break in the text the model sees ("one<br>two" is
      // two words); Render takes the '\n' out again.
      const bool newline =
          e.tag == GUMBO_TAG_BR && !s->text.text.empty() && !IsAsciiSpace(s->text.text.back());
      if (newline) s->text.text += '\n';
      const int tag =
          NewTag(s, std::string(e.original_tag.data, e.original_tag.length), s->text.text.size());
      s->tags[tag].newline_before = newline;
      s->cursor = b + e.original_tag.length;
      Attributes(n, &s->tags[tag]);
      // What gumbo put inside a self-closed <x/> follows it in the source.
      for (unsigned i = 0; i < c.length; ++i) Node(s, static_cast<const GumboNode*>(c.data[i]));
      if (OwnsEndTag(n)) {
        const size_t eb = Offset(e.original_end_tag.data);
        VoidBytes(s, eb, eb + e.original_end_tag.length);
      }
      return;
    }
    int tag = -1;
    if (OwnsStartTag(n)) {
      const size_t b = Offset(e.original_tag.data);
      Gap(s, b);
      if (!s->ok) return;
      tag = NewTag(s, std::string(e.original_tag.data, e.original_tag.length), s->text.text.size());
      s->cursor = b + e.original_tag.length;
      Attributes(n, &s->tags[tag]);
      s->open.push_back(tag);
    }
    for (unsigned i = 0; i < c.length; ++i) Node(s, static_cast<const GumboNode*>(c.data[i]));
    if (!s->ok) return;
    if (tag >= 0) {
      s->open.pop_back();
      InlineTag& t = s->text.tags[tag];
      t.range.end = s->text.text.size();
      if (OwnsEndTag(n)) {
        const size_t eb = Offset(e.original_end_tag.data);
        Gap(s, eb);
        s->text.tags[tag].close.assign(e.original_end_tag.data, e.original_end_tag.length);
        s->cursor = eb + e.original_end_tag.length;
      } else {
        t.close = SynthesizedClose(e);
        s->tags[tag].synthesized_close = true;
        s->awaiting_follower.push_back(tag);
      }
    } else if (OwnsEndTag(n)) {
      // An end tag of an element the parser reopened: its bytes stay where they are.
      const size_t eb = Offset(e.original_end_tag.data);
      VoidBytes(s, eb, eb + e.original_end_tag.length);
    }
  }

  void Run(const std::vector<const GumboNode*>& run) {
    if (run.empty()) return;
    size_t begin = SIZE_MAX, end = 0;
    for (const GumboNode* n : run) Span(n, &begin, &end);
    if (begin >= end) return;
    RunState s;
    s.cursor = begin;
    pending_run_ = candidates_.size();
    candidates_.emplace_back();
    run_attributes_.clear();
    for (const GumboNode* n : run) Node(&s, n);
    if (s.ok) Gap(&s, end);
    const bool unit = s.ok && !IsBlank(s.text.text);
    if (!unit) {
      // Copied as it is; attributes found in it stand alone.
      for (size_t a : run_attributes_) {
        candidates_[a].parent = -1;
        candidates_[a].info.nested = false;
      }
      candidates_[pending_run_].parent = -2;  // not a unit
      return;
    }
    TrimEdges(&s, &begin, &end);
    Candidate& c = candidates_[pending_run_];
    c.text = std::move(s.text);
    c.info.range = {begin, end};
    c.info.tags = std::move(s.tags);
    c.nested = run_attributes_;
  }

  // Whitespace at the edges of a run stays outside the unit (copied), where no tag is there.
  void TrimEdges(RunState* s, size_t* begin, size_t* end) const {
    std::string& text = s->text.text;
    size_t lead = 0;
    while (lead < text.size() && IsAsciiSpace(text[lead])) ++lead;
    for (const InlineTag& t : s->text.tags) lead = std::min(lead, t.range.begin);
    while (lead > 0 && src_.substr(*begin, lead) != std::string_view(text).substr(0, lead)) --lead;
    size_t trail = 0;
    while (trail < text.size() - lead && IsAsciiSpace(text[text.size() - 1 - trail])) ++trail;
    for (const InlineTag& t : s->text.tags) trail = std::min(trail, text.size() - t.range.end);
    while (trail > 0 &&
           src_.substr(*end - trail, trail) != std::string_view(text).substr(text.size() - trail)) {
      --trail;
    }
    text = text.substr(lead, text.size() - lead - trail);
    for (InlineTag& t : s->text.tags) {
      t.range.begin -= lead;
      t.range.end -= lead;
    }
    *begin += lead;
    *end -= trail;
  }

  std::string_view src_;
  Parsed* impl_;
  const std::vector<std::string>& untranslated_;  // tag names, lower case
  std::vector<Candidate> candidates_;
  std::unordered_map<const GumboNode*, bool> inline_memo_;
  size_t pending_run_ = 0;
  std::vector<size_t> run_attributes_;
};

std::string Translation(const std::string& input, const Parsed& doc, size_t unit,
                        const std::vector<std::string>& translations) {
  if (unit < translations.size()) return translations[unit];
  const ByteRange r = doc.info[unit].range;
  return input.substr(r.begin, r.end - r.begin);  // no translation given: the source
}

// The value goes back inside the source's quotes; a quote of that kind in it is escaped, and an
// unquoted value that no longer can be gets double quotes.
std::string RenderAttribute(const std::string& input, const Parsed& doc, size_t unit,
                            const std::vector<std::string>& translations) {
  const std::string value = Translation(input, doc, unit, translations);
  char quote = doc.info[unit].quote;
  const bool needs_quotes =
      value.empty() || value.find_first_of(" \t\n\r\f\"'>") != std::string::npos;
  std::string out;
  if (quote == 0 && needs_quotes) {
    quote = '"';
    out += quote;
  }
  for (char c : value) {
    if (c == quote && quote == '"') {
      out += "&quot;";
    } else if (c == quote && quote == '\'') {
      out += "&#39;";
    } else {
      out += c;
    }
  }
  if (doc.info[unit].quote == 0 && quote != 0) out += quote;
  return out;
}

// Walks the translation's tags (the unit's start and end tags, in any order InsertTags put
// them) to write translated attributes into start tags and drop end tags the source omitted
// where they stand as in the source: at the unit's end or just before another end tag.
std::string RenderBlock(const std::string& input, const Parsed& doc, size_t unit,
                        const std::vector<std::string>& translations) {
  if (unit >= translations.size()) return Translation(input, doc, unit, translations);
  const std::string& tr = translations[unit];
  const MarkedText& m = doc.units[unit];
  const std::vector<TagInfo>& tags = doc.info[unit].tags;
  std::vector<bool> used(m.tags.size(), false);
  // The tags by their start tag's bytes (identical ones taken in order), and the lengths of
  // those, longest first.
  std::map<std::string_view, std::pair<size_t, std::vector<int>>> by_open;
  for (size_t t = 0; t < m.tags.size(); ++t)
    by_open[m.tags[t].open].second.push_back(static_cast<int>(t));
  std::vector<size_t> lengths;
  for (const auto& [open, entry] : by_open) lengths.push_back(open.size());
  std::sort(lengths.begin(), lengths.end(), std::greater<>());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  std::vector<int> stack;
  std::string out;
  size_t i = 0;
  while (i < tr.size()) {
    if (tr[i] != '<') {
      const size_t next = std::min(tr.find('<', i), tr.size());
      out.append(tr, i, next - i);
      i = next;
      continue;
    }
    const std::string_view rest = std::string_view(tr).substr(i);
    if (!stack.empty() && StartsWith(rest, m.tags[stack.back()].close)) {
      const int t = stack.back();
      stack.pop_back();
      const size_t after = i + m.tags[t].close.size();
      const std::string_view next = std::string_view(tr).substr(after);
      const int follower = tags[t].follower;
      const bool drop =
          tags[t].synthesized_close &&
          (next.empty() || StartsWith(next, "</") ||
           (follower >= 0 && !used[follower] && StartsWith(next, m.tags[follower].open)));
      if (!drop) out += m.tags[t].close;
      i = after;
      continue;
    }
    // The longest start tag of the unit not yet seen that the text here starts with.
    int best = -1;
    for (size_t length : lengths) {
      if (length > rest.size()) continue;
      const auto it = by_open.find(rest.substr(0, length));
      if (it == by_open.end()) continue;
      auto& [next_unused, indices] = it->second;
      if (next_unused < indices.size()) {
        best = indices[next_unused++];
        break;
      }
    }
    if (best < 0) {
      out += '<';
      ++i;
      continue;
    }
    used[best] = true;
    if (tags[best].newline_before && !out.empty() && out.back() == '\n') {
      out.pop_back();
      if (!out.empty() && out.back() == '\r') out.pop_back();
    }
    const InlineTag& tag = m.tags[best];
    size_t pos = 0;
    for (const auto& [attr, bytes] : tags[best].attributes) {
      out.append(tag.open, pos, bytes.begin - pos);
      out += RenderAttribute(input, doc, attr, translations);
      pos = bytes.end;
    }
    out.append(tag.open, pos, std::string::npos);
    if (!tag.is_void()) stack.push_back(best);
    i += tag.open.size();
  }
  return out;
}

}  // namespace

struct HtmlDocument::Impl {
  std::string input;
  Parsed doc;
};

absl::StatusOr<HtmlDocument> HtmlDocument::Parse(
    std::string_view html, const std::vector<std::string>& untranslated_elements) {
  auto impl = std::make_unique<Impl>();
  impl->input = std::string(html);
  GumboOptions options = kGumboDefaultOptions;
  options.fragment_context = GUMBO_TAG_DIV;
  options.fragment_namespace = GUMBO_NAMESPACE_HTML;
  // gumbo copies the stack of open elements into each parse error it records: quadratic memory
  // on deep input, and the errors are of no use here.
  options.max_errors = 0;
  GumboOutput* output = gumbo_parse_with_options(&options, impl->input.data(), impl->input.size());
  if (output == nullptr) return absl::InvalidArgumentError("the HTML parser gave no tree");
  Builder builder(impl->input, &impl->doc, untranslated_elements);
  if (!builder.DepthOk(output->root, 0)) {
    gumbo_destroy_output(&options, output);
    return absl::InvalidArgumentError("HTML nests elements deeper than " +
                                      std::to_string(kMaxDepth) + " levels");
  }
  builder.LearnAll(output->root);
  builder.Block(output->root);
  builder.Finish();
  gumbo_destroy_output(&options, output);
  return HtmlDocument(std::move(impl));
}

HtmlDocument::HtmlDocument(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HtmlDocument::HtmlDocument(HtmlDocument&&) noexcept = default;
HtmlDocument& HtmlDocument::operator=(HtmlDocument&&) noexcept = default;
HtmlDocument::~HtmlDocument() = default;

const std::vector<MarkedText>& HtmlDocument::units() const { return impl_->doc.units; }

bool HtmlDocument::IsAttribute(size_t unit) const {
  return unit < impl_->doc.info.size() && impl_->doc.info[unit].attribute;
}

std::string HtmlDocument::EscapeUnitText(size_t unit, std::string_view text) const {
  return IsAttribute(unit) ? EscapeAttribute(text) : EscapeText(text);
}

std::string HtmlDocument::EscapeText(std::string_view text) const {
  return Escape(text, impl_->doc.text_spellings, /*attribute=*/false);
}

std::string HtmlDocument::EscapeAttribute(std::string_view text) const {
  return Escape(text, impl_->doc.attribute_spellings, /*attribute=*/true);
}

std::string HtmlDocument::Render(const std::vector<std::string>& translations) const {
  std::vector<size_t> order;
  for (size_t u = 0; u < impl_->doc.info.size(); ++u) {
    if (!impl_->doc.info[u].nested) order.push_back(u);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return impl_->doc.info[a].range.begin < impl_->doc.info[b].range.begin;
  });
  std::string out;
  size_t pos = 0;
  for (size_t u : order) {
    const ByteRange r = impl_->doc.info[u].range;
    out.append(impl_->input, pos, r.begin - pos);
    out += impl_->doc.info[u].attribute ? RenderAttribute(impl_->input, impl_->doc, u, translations)
                                        : RenderBlock(impl_->input, impl_->doc, u, translations);
    pos = r.end;
  }
  out.append(impl_->input, pos, std::string::npos);
  return out;
}

}  // namespace transerve::text
