// Measures sentence boundary detection against paragraphs with known boundaries
// (tests/text/data/sentences_en.txt): a naive rule splitter, ICU's sentence rules, ICU with the
// locale's abbreviation suppressions, and what SplitSentences ships. Prints a Markdown table;
// --errors also lists every missed and spurious boundary. Not a test: it measures.
//
//   sentence_split_eval [--errors] [data file] [language]
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "tests/testing/paths.h"
#include "text/sentence_breaks.h"
#include "text/sentence_splitter.h"

namespace transerve::text {
namespace {

struct Paragraph {
  std::string text;
  std::set<size_t> starts;  // byte offsets where a sentence after the first begins
};

std::vector<Paragraph> ReadParagraphs(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(2);
  }
  std::vector<Paragraph> paragraphs;
  Paragraph current;
  auto flush = [&] {
    if (!current.text.empty()) paragraphs.push_back(current);
    current = {};
  };
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '#') continue;
    if (line.empty()) {
      flush();
      continue;
    }
    if (!current.text.empty()) {
      current.text += ' ';
      current.starts.insert(current.text.size());
    }
    current.text += line;
  }
  flush();
  return paragraphs;
}

bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }

// The rule many pipelines start with: a sentence ends at . ! or ? (and closing quotes or
// brackets) followed by spaces and an upper-case letter, perhaps behind an opening quote.
std::set<size_t> NaiveStarts(const std::string& s) {
  std::set<size_t> starts;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '.' && s[i] != '!' && s[i] != '?') continue;
    size_t j = i + 1;
    while (j < s.size() && (s[j] == '"' || s[j] == '\'' || s[j] == ')' || s[j] == ']')) ++j;
    const size_t spaces = j;
    while (j < s.size() && s[j] == ' ') ++j;
    if (j == spaces) continue;
    size_t k = j;
    if (k < s.size() && (s[k] == '"' || s[k] == '\'' || s[k] == '(')) ++k;
    if (k < s.size() && IsUpper(s[k])) starts.insert(j);
  }
  return starts;
}

std::set<size_t> IcuStarts(const std::string& s, const std::string& language, BreakRules rules) {
  const auto v = SentenceStarts(s, language, rules);
  return {v.begin(), v.end()};
}

// Where SplitSentences starts a sentence: the start of each piece to translate but the first
// counts from the end of the layout before it, as the known boundaries do (after one space).
std::set<size_t> SplitterStarts(const std::string& s, const std::string& language) {
  std::set<size_t> starts;
  bool first = true;
  for (const TextPiece& p : SplitSentences(s, {.split_sentences = true, .language = language})) {
    if (!p.translate) continue;
    if (!first) starts.insert(p.range.begin);
    first = false;
  }
  return starts;
}

struct Method {
  const char* name;
  std::function<std::set<size_t>(const std::string&)> starts;
};

}  // namespace
}  // namespace transerve::text

int main(int argc, char** argv) {
  using namespace transerve::text;
  bool show_errors = false;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--errors") == 0) {
      show_errors = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  const std::string path =
      args.size() > 0 ? args[0]
                      : transerve::testing::SourceDir() + "/tests/text/data/sentences_en.txt";
  const std::string language = args.size() > 1 ? args[1] : "en";
  const std::vector<Paragraph> paragraphs = ReadParagraphs(path);
  size_t boundaries = 0;
  for (const Paragraph& p : paragraphs) boundaries += p.starts.size();

  const std::vector<Method> methods = {
      {"naive rule ([.!?] + space + upper case)", NaiveStarts},
      {"ICU sentence iterator",
       [&](const std::string& s) { return IcuStarts(s, language, BreakRules::kIcu); }},
      {"ICU + its filter (ss=standard)",
       [&](const std::string& s) { return IcuStarts(s, language, BreakRules::kIcuSuppressed); }},
      {"ICU + its locale list as whole words",
       [&](const std::string& s) { return IcuStarts(s, language, BreakRules::kIcuLocaleList); }},
      {"ICU + curated list, initials, ordinals",
       [&](const std::string& s) { return IcuStarts(s, language, BreakRules::kIcuCurated); }},
      {"ICU + curated + no break inside tokens or before lower case after ?/!",
       [&](const std::string& s) { return IcuStarts(s, language, BreakRules::kIcuCuratedJoined); }},
      {"SplitSentences (shipped)",
       [&](const std::string& s) { return SplitterStarts(s, language); }},
  };
  std::printf("%zu paragraphs, %zu boundaries between sentences (%s)\n\n", paragraphs.size(),
              boundaries, path.c_str());
  std::printf("| method | precision | recall | F1 | false breaks | missed | paragraphs exact |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const Method& m : methods) {
    size_t hits = 0, spurious = 0, missed = 0, exact = 0;
    for (const Paragraph& p : paragraphs) {
      const std::set<size_t> found = m.starts(p.text);
      size_t here_spurious = 0, here_missed = 0;
      for (size_t b : found) {
        if (p.starts.count(b)) {
          ++hits;
        } else {
          ++here_spurious;
          if (show_errors) {
            std::fprintf(stderr, "[%s] false break: %s|%s\n", m.name, p.text.substr(0, b).c_str(),
                         p.text.substr(b).c_str());
          }
        }
      }
      for (size_t b : p.starts) {
        if (found.count(b)) continue;
        ++here_missed;
        if (show_errors) {
          std::fprintf(stderr, "[%s] missed: %s|%s\n", m.name, p.text.substr(0, b).c_str(),
                       p.text.substr(b).c_str());
        }
      }
      spurious += here_spurious;
      missed += here_missed;
      exact += here_spurious == 0 && here_missed == 0;
    }
    const double precision = hits + spurious ? double(hits) / double(hits + spurious) : 0;
    const double recall = boundaries ? double(hits) / double(boundaries) : 0;
    const double f1 = precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0;
    std::printf("| %s | %.3f | %.3f | %.3f | %zu | %zu | %zu / %zu |\n", m.name, precision, recall,
                f1, spurious, missed, exact, paragraphs.size());
  }
  return 0;
}
