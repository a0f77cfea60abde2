// transerve-protect-spans: the text layer's Protect / Unprotect over JSON lines, so that
// bench/placeholder_standins.py measures the C++ code end to end with the real model.
//   {"text": T}                  -> {"model_text": M, "spans": [[begin, end, kind], ...]}
//   {"text": T, "translation": X} -> {"text": X with T's spans put back}
// Without an alignment (transerve-translate prints none) a dropped span goes where its
// relative position in the sentence puts it.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "text/protected_spans.h"

namespace {

using transerve::text::AlignedTranslation;
using transerve::text::ByteRange;

std::vector<ByteRange> WordRanges(const std::string& s) {
  std::vector<ByteRange> words;
  size_t p = 0;
  while (p < s.size()) {
    while (p < s.size() && s[p] == ' ') ++p;
    size_t e = s.find(' ', p);
    if (e == std::string::npos) e = s.size();
    if (e > p) words.push_back({p, e});
    p = e;
  }
  return words;
}

}  // namespace

int main() {
  std::string line;
  int bad = 0;
  while (std::getline(std::cin, line)) {
    const nlohmann::json in = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!in.is_object() || !in.contains("text") || !in["text"].is_string()) {
      std::cerr << "transerve-protect-spans: not a {\"text\": ...} object: " << line << "\n";
      std::cout << "{}\n";
      ++bad;
      continue;
    }
    const transerve::text::ProtectedText p =
        transerve::text::Protect(in["text"].get<std::string>(), {});
    nlohmann::json out;
    if (!in.contains("translation")) {
      out["model_text"] = p.model_text;
      out["spans"] = nlohmann::json::array();
      for (const auto& s : p.spans) {
        out["spans"].push_back({s.range.begin, s.range.end, static_cast<int>(s.kind)});
      }
    } else {
      AlignedTranslation t;
      t.source = p.model_text;
      t.target = in["translation"].get<std::string>();
      t.source_tokens = WordRanges(t.source);
      t.target_tokens = WordRanges(t.target);
      out["text"] = transerve::text::Unprotect(p, std::move(t)).target;
    }
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return bad == 0 ? 0 : 1;
}
