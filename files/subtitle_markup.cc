#include "files/subtitle_markup.h"

#include <unicode/utf8.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"

namespace transerve::files {
namespace {

constexpr size_t kMaxTagBytes = 256;

// The tag's name: the letters after '<' or "</" (for <c.yellow> "c", for <v Bob> "v").
std::string_view TagName(std::string_view inner) {
  if (!inner.empty() && inner[0] == '/') inner.remove_prefix(1);
  size_t n = 0;
  while (n < inner.size() && absl::ascii_isalpha(static_cast<unsigned char>(inner[n]))) ++n;
  return inner.substr(0, n);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = absl::ascii_tolower(static_cast<unsigned char>(c));
  return out;
}

bool IsKnownTag(std::string_view name, bool subrip) {
  const std::string lower = Lower(name);
  static constexpr std::string_view kSubRip[] = {"i", "b", "u", "s", "font"};
  static constexpr std::string_view kWebVtt[] = {"c", "i", "b", "u", "v", "lang", "ruby", "rt"};
  if (subrip) return std::find(std::begin(kSubRip), std::end(kSubRip), lower) != std::end(kSubRip);
  return std::find(std::begin(kWebVtt), std::end(kWebVtt), lower) != std::end(kWebVtt);
}

// WebVTT's timestamp tag <[hh:]mm:ss.mmm>.
bool IsTimestamp(std::string_view inner) {
  if (inner.empty() || !absl::ascii_isdigit(static_cast<unsigned char>(inner[0]))) return false;
  return std::all_of(inner.begin(), inner.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
  });
}

// The character a WebVTT character reference at s[pos] ('&') stands for, and its length; 0 for
// none.
size_t DecodeReference(std::string_view s, size_t pos, std::string* out) {
  static constexpr std::pair<std::string_view, std::string_view> kNamed[] = {
      {"&amp;", "&"},
      {"&lt;", "<"},
      {"&gt;", ">"},
      {"&nbsp;", "\xC2\xA0"},
      {"&lrm;", "\xE2\x80\x8E"},
      {"&rlm;", "\xE2\x80\x8F"}};
  const std::string_view rest = s.substr(pos);
  for (const auto& [name, value] : kNamed) {
    if (rest.substr(0, name.size()) == name) {
      out->append(value);
      return name.size();
    }
  }
  if (rest.size() < 4 || rest[1] != '#') return 0;
  const bool hex = rest[2] == 'x' || rest[2] == 'X';
  size_t p = hex ? 3 : 2;
  UChar32 c = 0;
  const size_t first = p;
  while (p < rest.size() && p - first < 7) {
    const char d = rest[p];
    int v;
    if (absl::ascii_isdigit(static_cast<unsigned char>(d))) {
      v = d - '0';
    } else if (hex && absl::ascii_isxdigit(static_cast<unsigned char>(d))) {
      v = absl::ascii_tolower(static_cast<unsigned char>(d)) - 'a' + 10;
    } else {
      break;
    }
    c = c * (hex ? 16 : 10) + v;
    ++p;
  }
  if (p == first || p >= rest.size() || rest[p] != ';' || c <= 0 || c > 0x10FFFF ||
      (c >= 0xD800 && c <= 0xDFFF)) {
    return 0;
  }
  char bytes[4];
  int32_t n = 0;
  U8_APPEND_UNSAFE(bytes, n, c);
  out->append(bytes, static_cast<size_t>(n));
  return p + 1;
}

void WriteChildren(const text::MarkedText& m, int parent, size_t begin, size_t end, bool subrip,
                   std::string* out) {
  size_t pos = begin;
  for (size_t i = 0; i < m.tags.size(); ++i) {
    const text::InlineTag& tag = m.tags[i];
    if (tag.parent != parent) continue;
    out->append(
        EscapeSubtitleText(std::string_view(m.text).substr(pos, tag.range.begin - pos), subrip));
    out->append(tag.open);
    pos = tag.range.begin;
    if (!tag.is_void()) {
      WriteChildren(m, static_cast<int>(i), tag.range.begin, tag.range.end, subrip, out);
      out->append(tag.close);
      pos = tag.range.end;
    }
  }
  out->append(EscapeSubtitleText(std::string_view(m.text).substr(pos, end - pos), subrip));
}

}  // namespace

size_t SubtitleTagEnd(std::string_view markup, size_t pos, bool subrip) {
  if (pos >= markup.size()) return pos;
  if (subrip && markup[pos] == '{' && pos + 1 < markup.size() && markup[pos + 1] == '\\') {
    const size_t close = markup.find('}', pos);
    if (close != std::string_view::npos && close - pos < kMaxTagBytes &&
        markup.substr(pos, close - pos).find('{', 1) == std::string_view::npos) {
      return close + 1;
    }
    return pos;
  }
  if (markup[pos] != '<') return pos;
  const size_t close = markup.find('>', pos);
  if (close == std::string_view::npos || close - pos > kMaxTagBytes) return pos;
  const std::string_view inner = markup.substr(pos + 1, close - pos - 1);
  if (inner.find('<') != std::string_view::npos) return pos;
  if (!subrip && IsTimestamp(inner)) return close + 1;
  const std::string_view name = TagName(inner);
  if (name.empty() || !IsKnownTag(name, subrip)) return pos;
  // After the name: nothing, or what a tag may carry (attributes, classes, a voice's name).
  const size_t after = (inner[0] == '/' ? 1 : 0) + name.size();
  if (after < inner.size() && absl::ascii_isalnum(static_cast<unsigned char>(inner[after]))) {
    return pos;  // <index>, <bold>: not a tag of the format
  }
  return close + 1;
}

text::MarkedText LiftSubtitleTags(std::string_view source, bool subrip) {
  text::MarkedText m;
  std::vector<int> open;      // the tags not yet closed, outermost first
  std::vector<int> unclosed;  // start tags whose end tag never came
  auto name_of = [](std::string_view tag) { return Lower(TagName(tag.substr(1))); };
  for (size_t p = 0; p < source.size();) {
    const size_t end = SubtitleTagEnd(source, p, subrip);
    if (end > p) {
      const std::string_view bytes = source.substr(p, end - p);
      p = end;
      const bool is_close = bytes.size() > 1 && bytes[0] == '<' && bytes[1] == '/';
      if (is_close) {
        // Closes the innermost open tag of its name; those opened inside it stay unclosed.
        const std::string name = name_of(bytes);
        auto match = std::find_if(open.rbegin(), open.rend(), [&](int i) {
          return name_of(m.tags[static_cast<size_t>(i)].open) == name;
        });
        if (match != open.rend()) {
          const auto first = match.base() - 1;
          unclosed.insert(unclosed.end(), first + 1, open.end());
          text::InlineTag& tag = m.tags[static_cast<size_t>(*first)];
          tag.close = std::string(bytes);
          tag.range.end = m.text.size();
          open.erase(first, open.end());
          continue;
        }
      }
      text::InlineTag tag;
      tag.range = {m.text.size(), m.text.size()};
      tag.open = std::string(bytes);
      tag.parent = open.empty() ? -1 : open.back();
      m.tags.push_back(std::move(tag));
      // A start tag: not an end tag, not a timestamp, not an override, not self-closed.
      const bool is_start = bytes[0] == '<' && !is_close && bytes[bytes.size() - 2] != '/' &&
                            !(!subrip && IsTimestamp(bytes.substr(1, bytes.size() - 2)));
      if (is_start) open.push_back(static_cast<int>(m.tags.size() - 1));
      continue;
    }
    if (!subrip && source[p] == '&') {
      const size_t n = DecodeReference(source, p, &m.text);
      if (n > 0) {
        p += n;
        continue;
      }
    }
    m.text.push_back(source[p++]);
  }
  // Tags never closed stay where they were, as void tags (their range is empty and they have no
  // end tag); what was inside them moves to their parent.
  unclosed.insert(unclosed.end(), open.begin(), open.end());
  auto is_unclosed = [&](int i) {
    return i >= 0 && std::find(unclosed.begin(), unclosed.end(), i) != unclosed.end();
  };
  for (text::InlineTag& tag : m.tags) {
    while (is_unclosed(tag.parent)) tag.parent = m.tags[static_cast<size_t>(tag.parent)].parent;
  }
  return m;
}

std::string WriteSubtitleMarkup(const text::MarkedText& marked, bool subrip) {
  std::string out;
  WriteChildren(marked, -1, 0, marked.text.size(), subrip, &out);
  return out;
}

std::string EscapeSubtitleText(std::string_view text, bool subrip) {
  if (subrip) return std::string(text);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out.append("&amp;");
        break;
      case '<':
        out.append("&lt;");
        break;
      case '>':
        out.append("&gt;");
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

}  // namespace transerve::files
