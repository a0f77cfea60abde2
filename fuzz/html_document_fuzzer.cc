// Fuzz target: the HTML layer. Any bytes are parsed as a fragment; every unit is translated by a
// fake translator (words upper-cased and reordered by the input's own bytes, with the alignment
// that says so) and the document rendered. What must hold: no crash; InsertTags puts every tag
// of a unit in exactly once, nested like a stack, around the target's text unchanged; the
// rendered document parses again.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tests/text/fake_translation.h"
#include "text/html_document.h"
#include "text/marked_text.h"

namespace {

using transerve::text::AlignedTranslation;
using transerve::text::HtmlDocument;
using transerve::text::InsertTags;
using transerve::text::MarkedText;

// Above this many words a unit is translated without an alignment: InsertTags maps each tag
// through the whole attention matrix, fine for a sentence, slow for a fuzzer's 64 KiB word.
constexpr size_t kMaxAlignedWords = 200;

AlignedTranslation FakeTranslation(const std::string& text, uint32_t seed) {
  namespace t = transerve::text::testing;
  const size_t n = t::Words(text).size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = (i + seed) % n;     // a rotation ...
  if (seed % 2 == 1) std::reverse(order.begin(), order.end());  // ... or its mirror
  return t::Reordered(text, order, seed, n <= kMaxAlignedWords && seed % 7 != 0);
}

std::string Marker(char kind, size_t id) {
  std::string m = "\xFF";
  m += kind;
  m += std::to_string(id);
  m += '\xFF';
  return m;
}

// Tags made of bytes gumbo's (valid UTF-8) text never holds, so they can be found again.
MarkedText WithMarkers(const MarkedText& m) {
  MarkedText out = m;
  for (size_t i = 0; i < out.tags.size(); ++i) {
    const bool is_void = out.tags[i].is_void();
    out.tags[i].open = Marker(is_void ? 'v' : 'o', i);
    out.tags[i].close = is_void ? std::string() : Marker('c', i);
  }
  return out;
}

// Every marker exactly once, opens and closes nested like a stack; the text between them is
// the target's.
void CheckMarkers(const std::string& out, size_t tags, const std::string& target) {
  std::vector<int> seen(tags, 0), stack;
  std::string text;
  size_t i = 0;
  while (i < out.size()) {
    if (out[i] != '\xFF') {
      text += out[i++];
      continue;
    }
    const size_t end = out.find('\xFF', i + 1);
    if (end == std::string::npos) std::abort();
    const char kind = out[i + 1];
    const size_t id = std::stoul(out.substr(i + 2, end - i - 2));
    if (id >= tags || ++seen[id] > (kind == 'v' ? 1 : 2)) std::abort();
    if (kind == 'o') stack.push_back(static_cast<int>(id));
    if (kind == 'c') {
      if (stack.empty() || stack.back() != static_cast<int>(id)) std::abort();
      stack.pop_back();
    }
    i = end + 1;
  }
  if (!stack.empty() || text != target) std::abort();
  for (size_t id = 0; id < tags; ++id) {
    if (seen[id] == 0) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view html(reinterpret_cast<const char*>(data), size);
  auto doc = HtmlDocument::Parse(html);
  if (!doc.ok()) return 0;
  uint32_t seed = 0;
  for (size_t i = 0; i < size && i < 8; ++i) seed = seed * 31 + data[i];
  std::vector<std::string> translations;
  for (size_t u = 0; u < doc->units().size(); ++u) {
    const MarkedText& m = doc->units()[u];
    if (doc->IsAttribute(u)) {
      translations.push_back(doc->EscapeAttribute(transerve::text::testing::Upper(m.text)));
      continue;
    }
    const AlignedTranslation t = FakeTranslation(m.text, seed + static_cast<uint32_t>(u));
    const std::string marked =
        InsertTags(WithMarkers(m), t, [](std::string_view s) { return std::string(s); });
    CheckMarkers(marked, m.tags.size(), t.target);
    translations.push_back(
        InsertTags(m, t, [&](std::string_view s) { return doc->EscapeText(s); }));
  }
  const std::string rendered = doc->Render(translations);
  (void)HtmlDocument::Parse(rendered);
  return 0;
}
