// Where sentences start inside one line of text: ICU's sentence rules, with the breaks they
// place wrongly after abbreviations, initials, ordinals and inside URLs taken back. The rule
// variants exist so tests/text/sentence_split_eval can measure them against each other;
// SplitSentences uses kShipped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace transerve::text {

enum class BreakRules {
  kIcu,               // ICU's sentence rules as the locale defines them
  kIcuSuppressed,     // ICU's own filter with the locale's abbreviation list (ss=standard)
  kIcuLocaleList,     // ICU's rules; the same list applied by us, to whole words only
  kIcuCurated,        // ICU's rules; our list per language: titles and reference words ("Dr.",
                      // "Fig.", "e.g."), single-letter initials ("J. R. R. Tolkien", "z. B."), and
                      // ordinals ("3. Oktober") in languages that write them with a full stop
  kIcuCuratedJoined,  // plus: no break between two ASCII non-space characters ("Yahoo!Inc",
                      // "?q=" in a URL) nor after ? or ! before a lower-case word ("Where?" she
                      // asked.)
};
inline constexpr BreakRules kShipped = BreakRules::kIcuCuratedJoined;

// Byte offsets, ascending and inside (0, line.size()), where a new sentence starts. A
// sentence's trailing whitespace stays with it, as ICU places breaks. `language` is an ICU
// locale ("en", "de", "pt_BR"); an unknown one falls back to the root rules.
std::vector<size_t> SentenceStarts(std::string_view line, const std::string& language,
                                   BreakRules rules = kShipped);

}  // namespace transerve::text
