// Terms a caller wants translated one way (a glossary: source term -> target term) or kept as
// they are (a do-not-translate list), compiled once for matching anywhere in a text. The
// protected-span machinery (protected_spans.h) masks each match and writes its target back where
// the model put the mask.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace transerve::text {

struct Term {
  std::string source;
  std::string target;  // what the translation must hold; the source itself for a kept term
};

// Which spellings of a source term match in a text.
enum class TermCase {
  // Only the term as written (do-not-translate lists: "GNOME" is not "gnome").
  kExact,
  // Also, for a term written in lower case, the same with its first letter capitalised
  // ("cloud" at the start of a sentence: "Cloud"), and any term in capitals ("CLOUD"); the
  // target is then capitalised or put in capitals the same way. Glossaries match so.
  kSentenceAndCapitals,
};

// Why `term` cannot be a glossary term, or "" when it can: it must be non-empty valid UTF-8
// without control characters or line breaks, and without white space at either end.
std::string TermProblem(std::string_view term);

class TermTable;

// A do-not-translate list as a table: each term kept as written (TermCase::kExact).
std::shared_ptr<const TermTable> KeptTerms(const std::vector<std::string>& terms);

class TermTable {
 public:
  TermTable() = default;
  // Terms with an empty source are dropped; of two with the same source, the first is kept.
  TermTable(const std::vector<Term>& terms, TermCase matching);

  struct Match {
    size_t length = 0;                    // bytes of the text matched; 0: none
    const std::string* target = nullptr;  // what to write for them (owned by the table)
  };
  // The longest term that starts at byte `pos` of `text` and neither starts nor ends inside a
  // word (a term's non-word edge may touch a word: "C++17"). At one length the term as written
  // wins over a case variant.
  Match MatchAt(std::string_view text, size_t pos) const;

  bool empty() const { return forms_.empty(); }
  size_t size() const { return terms_; }

 private:
  struct Form {
    std::string pattern;  // the spelling looked for
    std::string target;   // the target in the same case
  };
  std::vector<Form> forms_;  // longest pattern first; the term as written before its variants
  // Forms by their pattern's first code point, each list in forms_'s order.
  std::unordered_map<int32_t, std::vector<size_t>> by_first_char_;
  size_t terms_ = 0;
};

}  // namespace transerve::text
