// Test helpers for the markup tests: a fake "translator" that rewrites a segment word by word
// (upper-casing, reordering) with the alignment a model would give it, and checkers for the
// tags of the output.
#pragma once

#include <gumbo.h>

#include <algorithm>
#include <cctype>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "text/aligned_translation.h"

namespace transerve::text::testing {

inline bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

// The whitespace-separated words of `text`.
inline std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !IsSpace(text[j])) ++j;
    if (j > i) words.emplace_back(text.substr(i, j - i));
    i = j;
  }
  return words;
}

inline std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x80) c = static_cast<char>(std::toupper(c));
  }
  return out;
}

inline std::vector<std::string> Pieces(const std::vector<std::string>& words) {
  std::vector<std::string> pieces;
  for (const std::string& w : words) pieces.push_back("\xE2\x96\x81" + w);
  pieces.push_back("</s>");
  return pieces;
}

// Weights where target token i attends to source token to[i] (0.7) and at random a little to
// the others.
inline std::vector<float> Weights(const std::vector<int>& to, size_t sources, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> noise(0.0f, 0.25f / static_cast<float>(sources));
  std::vector<float> w;
  for (int t : to) {
    for (size_t s = 0; s < sources; ++s) w.push_back(static_cast<int>(s) == t ? 0.7f : noise(rng));
  }
  return w;
}

// The source unchanged, every token aligned to itself: InsertTags must give the source back.
inline AlignedTranslation Identity(const std::string& source, uint32_t seed = 1) {
  AlignedTranslation t;
  t.source = t.target = source;
  const auto pieces = Pieces(Words(source));
  t.source_tokens = t.target_tokens = PieceRanges(source, pieces);
  std::vector<int> to(pieces.size());
  for (size_t i = 0; i < to.size(); ++i) to[i] = static_cast<int>(i);
  t.weights = Weights(to, pieces.size(), seed);
  return t;
}

// Target word i is source word order[i], upper-cased, words joined by single spaces.
// (`aligned` false: no weights, as from a model that returned none.)
inline AlignedTranslation Reordered(const std::string& source, const std::vector<size_t>& order,
                                    uint32_t seed = 1, bool aligned = true) {
  const auto words = Words(source);
  AlignedTranslation t;
  t.source = source;
  std::vector<std::string> target_words;
  std::vector<int> to;
  for (size_t i : order) {
    target_words.push_back(Upper(words[i]));
    to.push_back(static_cast<int>(i));
  }
  to.push_back(static_cast<int>(words.size()));  // </s> to </s>
  for (size_t i = 0; i < target_words.size(); ++i) t.target += (i ? " " : "") + target_words[i];
  t.source_tokens = PieceRanges(source, Pieces(words));
  t.target_tokens = PieceRanges(t.target, Pieces(target_words));
  if (aligned) t.weights = Weights(to, words.size() + 1, seed);
  return t;
}

inline AlignedTranslation Reversed(const std::string& source, uint32_t seed = 1) {
  std::vector<size_t> order(Words(source).size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
  return Reordered(source, order, seed);
}

inline AlignedTranslation Uppercased(const std::string& source, uint32_t seed = 1) {
  std::vector<size_t> order(Words(source).size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  return Reordered(source, order, seed);
}

// The markup tokens of an HTML string: tags, comments, doctypes (raw text elements' content
// skipped), in order.
inline std::vector<std::string> MarkupTokens(std::string_view html) {
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < html.size()) {
    if (html[i] != '<' || i + 1 >= html.size()) {
      ++i;
      continue;
    }
    const char n = html[i + 1];
    size_t end;
    if (html.substr(i, 4) == "<!--") {
      end = html.find("-->", i + 4);
      end = end == std::string_view::npos ? html.size() : end + 3;
    } else if (std::isalpha(static_cast<unsigned char>(n)) || n == '/' || n == '!' || n == '?') {
      end = i + 1;
      char quote = 0;
      while (end < html.size() && (quote || html[end] != '>')) {
        if (quote && html[end] == quote) {
          quote = 0;
        } else if (!quote && (html[end] == '"' || html[end] == '\'') && html[end - 1] == '=') {
          quote = html[end];
        }
        ++end;
      }
      end = std::min(end + 1, html.size());
    } else {
      ++i;
      continue;
    }
    std::string token(html.substr(i, end - i));
    tokens.push_back(token);
    i = end;
    // The content of a raw text element is not markup.
    for (const char* raw : {"<script", "<style", "<textarea", "<title"}) {
      const std::string_view r = raw;
      std::string lower = token;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower.compare(0, r.size(), r) == 0 && lower.size() > r.size() &&
          !std::isalnum(static_cast<unsigned char>(lower[r.size()]))) {
        const std::string close = "</" + std::string(r.substr(1));
        size_t j = i;
        while (j < html.size()) {
          std::string window(html.substr(j, close.size()));
          for (char& c : window) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          if (window == close) break;
          ++j;
        }
        i = j;
      }
    }
  }
  return tokens;
}

inline std::string TagName(std::string_view token) {
  size_t i = token[1] == '/' ? 2 : 1;
  std::string name;
  while (i < token.size() && !IsSpace(token[i]) && token[i] != '>' && token[i] != '/') {
    name += static_cast<char>(std::tolower(static_cast<unsigned char>(token[i])));
    ++i;
  }
  return name;
}

inline bool IsVoidTag(std::string_view token) {
  static const char* const kVoid[] = {"area",  "base", "br",   "col",   "embed",  "hr",    "img",
                                      "input", "link", "meta", "param", "source", "track", "wbr"};
  const std::string name = TagName(token);
  return std::find(std::begin(kVoid), std::end(kVoid), name) != std::end(kVoid) ||
         token.substr(token.size() >= 2 ? token.size() - 2 : 0) == "/>";
}

// Whether the start and end tags of `html` nest like a stack (voids, comments apart).
inline bool NestsLikeStack(std::string_view html) {
  std::vector<std::string> stack;
  for (const std::string& t : MarkupTokens(html)) {
    if (t[1] == '!' || t[1] == '?' || IsVoidTag(t)) continue;
    if (t[1] == '/') {
      if (stack.empty() || stack.back() != TagName(t)) return false;
      stack.pop_back();
    } else {
      stack.push_back(TagName(t));
    }
  }
  return stack.empty();
}

// Whether gumbo reads `html` without closing or opening any element the source did not.
inline bool GumboFindsNothingMissing(const std::string& html) {
  GumboOptions options = kGumboDefaultOptions;
  options.fragment_context = GUMBO_TAG_DIV;
  GumboOutput* out = gumbo_parse_with_options(&options, html.data(), html.size());
  bool ok = true;
  std::vector<const GumboNode*> todo;
  const GumboVector& top = out->root->v.element.children;
  for (unsigned i = 0; i < top.length; ++i) todo.push_back(static_cast<GumboNode*>(top.data[i]));
  while (!todo.empty()) {
    const GumboNode* n = todo.back();
    todo.pop_back();
    if (n->type != GUMBO_NODE_ELEMENT) continue;
    const bool void_like = n->v.element.children.length == 0 &&
                           n->v.element.original_end_tag.length == 0 &&
                           IsVoidTag(std::string_view(n->v.element.original_tag.data,
                                                      n->v.element.original_tag.length));
    // A table's tbody is the parser's, always.
    if (n->v.element.tag != GUMBO_TAG_TBODY &&
        ((n->parse_flags & GUMBO_INSERTION_BY_PARSER) ||
         ((n->parse_flags & GUMBO_INSERTION_IMPLICIT_END_TAG) && !void_like))) {
      ok = false;
    }
    const GumboVector& c = n->v.element.children;
    for (unsigned i = 0; i < c.length; ++i) todo.push_back(static_cast<GumboNode*>(c.data[i]));
  }
  gumbo_destroy_output(&options, out);
  return ok;
}

// The markup tokens, sorted and case-folded: what must come out once each.
inline std::vector<std::string> TagMultiset(std::string_view html) {
  std::vector<std::string> tokens = MarkupTokens(html);
  for (std::string& t : tokens) t = Upper(t);
  std::sort(tokens.begin(), tokens.end());
  return tokens;
}

}  // namespace transerve::text::testing
