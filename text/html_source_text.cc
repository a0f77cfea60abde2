#include "text/html_source_text.h"

#include <gumbo.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <cctype>

namespace transerve::text::html {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// For a reference gumbo decoded without its ';' ("&copy" in "&copyright"): how many bytes of
// `original` (from its '&') it took, found where the rest lines up with the decoded text after
// the one character it became; 0 when nothing lines up.
size_t LegacyReferenceLength(std::string_view original, size_t i, size_t name_end,
                             std::string_view decoded_rest) {
  for (size_t end = name_end; end > i + 1; --end) {
    const size_t n = std::min<size_t>(8, std::min(original.size() - end, decoded_rest.size()));
    if (original.substr(end, n) == decoded_rest.substr(0, n) &&
        (original.size() - end == 0) == decoded_rest.empty()) {
      return end - i;
    }
  }
  return 0;
}

// Whether "&" + `rest` starts a character reference gumbo would decode: asks gumbo, as its table
// of names is not public (only for a bare '&' the source itself wrote before a letter).
bool StartsReference(std::string_view rest) {
  std::string probe = "&";
  probe.append(rest.substr(0, 40));
  GumboOptions options = kGumboDefaultOptions;
  options.fragment_context = GUMBO_TAG_DIV;
  options.max_errors = 0;
  GumboOutput* out = gumbo_parse_with_options(&options, probe.data(), probe.size());
  bool decoded = true;
  const GumboVector& c = out->root->v.element.children;
  if (c.length > 0) {
    const auto* n = static_cast<const GumboNode*>(c.data[0]);
    if (n->type == GUMBO_NODE_TEXT) decoded = !StartsWith(n->v.text.text, probe.substr(0, 2));
  }
  gumbo_destroy_output(&options, out);
  return decoded;
}

// (In an attribute value only '&' can.)
bool LiteralIsSafe(UChar32 c, std::string_view rest, bool attribute) {
  if (rest.empty()) return true;
  const unsigned char n = static_cast<unsigned char>(rest[0]);
  if (c == '&') return !(std::isalnum(n) || n == '#') || !StartsReference(rest);
  if (c == '<' && !attribute) return !(std::isalpha(n) || n == '/' || n == '!' || n == '?');
  return true;
}

}  // namespace

void LearnSpellings(std::string_view original, std::string_view decoded, Spellings* out) {
  size_t i = 0, j = 0;
  auto next_cp = [&](size_t at, size_t* len) {
    int32_t k = static_cast<int32_t>(at);
    UChar32 c;
    U8_NEXT(decoded.data(), k, static_cast<int32_t>(decoded.size()), c);
    *len = static_cast<size_t>(k) - at;
    return c;
  };
  while (i < original.size() && j < decoded.size()) {
    size_t len = 0;
    const UChar32 c = next_cp(j, &len);
    if (original[i] == '&') {
      size_t k = i + 1;
      while (k < original.size() && k - i < 40 &&
             (std::isalnum(static_cast<unsigned char>(original[k])) || original[k] == '#')) {
        ++k;
      }
      const size_t n = k + 1 - i;
      if (k > i + 1 && k < original.size() && original[k] == ';' &&
          decoded.substr(j, n) != original.substr(i, n)) {
        out->emplace(c, std::string(original.substr(i, n)));
        i += n;
        j += len;
        continue;
      }
      if (k > i + 1 && decoded.substr(j, k - i) != original.substr(i, k - i)) {
        const size_t n = LegacyReferenceLength(original, i, k, decoded.substr(j + len));
        if (n == 0) return;
        out->emplace(c, std::string(original.substr(i, n)));
        i += n;
        j += len;
        continue;
      }
    }
    if (original[i] == '\r' && c == '\n') {
      const bool crlf = i + 1 < original.size() && original[i + 1] == '\n';
      out->emplace('\n', crlf ? "\r\n" : "\r");
      i += crlf ? 2 : 1;
      j += len;
      continue;
    }
    if (original.substr(i, len) != decoded.substr(j, len)) return;
    out->emplace(c, std::string(original.substr(i, len)));
    i += len;
    j += len;
  }
}

bool HasTagStart(std::string_view s) {
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    const unsigned char n = static_cast<unsigned char>(s[i + 1]);
    if (s[i] == '<' && (std::isalpha(n) || n == '/' || n == '!' || n == '?')) return true;
  }
  return false;
}

std::vector<TextPart> SplitMergedText(std::string_view original, std::string_view decoded) {
  std::vector<TextPart> parts;
  size_t i = 0, j = 0;
  auto text_part = [&]() -> TextPart& {
    if (parts.empty() || parts.back().markup) parts.push_back({false, i, i, ""});
    return parts.back();
  };
  while (i < original.size()) {
    const char c = original[i];
    const bool tag_start =
        c == '<' && i + 1 < original.size() &&
        (std::isalpha(static_cast<unsigned char>(original[i + 1])) || original[i + 1] == '/' ||
         original[i + 1] == '!' || original[i + 1] == '?');
    if (tag_start && (j >= decoded.size() || decoded[j] != '<' ||
                      decoded.substr(j, 2) != original.substr(i, 2))) {
      size_t end = i + 1;
      char quote = 0;
      while (end < original.size() && (quote || original[end] != '>')) {
        if (quote && original[end] == quote) {
          quote = 0;
        } else if (!quote && (original[end] == '"' || original[end] == '\'') &&
                   original[end - 1] == '=') {
          quote = original[end];
        }
        ++end;
      }
      if (end >= original.size()) return {};
      parts.push_back({true, i, end + 1, ""});
      i = end + 1;
      continue;
    }
    if (j >= decoded.size()) return {};
    size_t len = 1;
    size_t k = i + 1;
    if (c == '&') {
      while (k < original.size() && k - i < 40 &&
             (std::isalnum(static_cast<unsigned char>(original[k])) || original[k] == '#')) {
        ++k;
      }
    }
    const bool reference = c == '&' && k > i + 1 && k < original.size() && original[k] == ';' &&
                           decoded.substr(j, k + 1 - i) != original.substr(i, k + 1 - i);
    size_t legacy = 0;
    if (!reference && c == '&' && k > i + 1 &&
        decoded.substr(j, k - i) != original.substr(i, k - i)) {
      int32_t d = static_cast<int32_t>(j);
      U8_FWD_1(reinterpret_cast<const uint8_t*>(decoded.data()), d,
               static_cast<int32_t>(decoded.size()));
      legacy = LegacyReferenceLength(original, i, k, decoded.substr(static_cast<size_t>(d)));
      if (legacy == 0) return {};
    }
    if (reference || legacy > 0) {
      len = reference ? k + 1 - i : legacy;
      int32_t d = static_cast<int32_t>(j);
      U8_FWD_1(reinterpret_cast<const uint8_t*>(decoded.data()), d,
               static_cast<int32_t>(decoded.size()));
      TextPart& p = text_part();
      p.decoded.append(decoded.substr(j, static_cast<size_t>(d) - j));
      j = static_cast<size_t>(d);
    } else if (c == '\r' && decoded[j] == '\n') {
      len = i + 1 < original.size() && original[i + 1] == '\n' ? 2 : 1;
      text_part().decoded += '\n';
      ++j;
    } else if (c == decoded[j]) {
      text_part().decoded += c;
      ++j;
    } else {
      return {};
    }
    i += len;
    text_part().end = i;
  }
  if (j != decoded.size()) return {};
  return parts;
}

// A literal '&' or '<' is text only where what follows cannot start a reference or a tag.
std::string Escape(std::string_view text, const Spellings& spellings, bool attribute) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    int32_t k = static_cast<int32_t>(i);
    UChar32 c;
    U8_NEXT(text.data(), k, static_cast<int32_t>(text.size()), c);
    const size_t next = static_cast<size_t>(k);
    const std::string_view raw = text.substr(i, next - i);
    const auto it = c < 0 ? spellings.end() : spellings.find(c);
    if (it != spellings.end() &&
        !(it->second == raw && !LiteralIsSafe(c, text.substr(next), attribute))) {
      out += it->second;
    } else if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>' && it == spellings.end()) {
      out += "&gt;";
    } else if (c == '"' && attribute) {
      out += "&quot;";
    } else if (c == '\n' && it == spellings.end()) {
      out += '\n';
    } else {
      out += raw;
    }
    i = next;
  }
  return out;
}

}  // namespace transerve::text::html
