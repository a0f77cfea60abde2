// Where sentences start inside one line of text, by ICU's sentence rules. The rule variants
// exist so tests/text/sentence_split_eval can measure them against each other; SplitSentences
// uses kShipped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace transerve::text {

enum class BreakRules {
  kIcu,            // ICU's sentence rules as the locale defines them
  kIcuSuppressed,  // plus the locale's list of abbreviations never ending a sentence (ss=standard)
  kIcuSuppressedMore,  // plus, for Latin-script languages, no break after titles and reference
                       // words ICU's list lacks or cannot apply ("Dr.", "St.", "Fig.", "e.g.")
                       // nor after a single capital initial ("J. R. R. Tolkien")
  kIcuSuppressedMoreJoined,  // plus: no break between two ASCII non-space characters ("Yahoo!Inc",
                             // "?q=" in a URL) nor after ? or ! before a lower-case word
                             // ("Where?" she asked.)
};
inline constexpr BreakRules kShipped = BreakRules::kIcuSuppressedMoreJoined;

// Byte offsets, ascending and inside (0, line.size()), where a new sentence starts. A
// sentence's trailing whitespace stays with it, as ICU places breaks. `language` is an ICU
// locale ("en", "de", "pt_BR"); an unknown one falls back to the root rules.
std::vector<size_t> SentenceStarts(std::string_view line, const std::string& language,
                                   BreakRules rules = kShipped);

}  // namespace transerve::text
