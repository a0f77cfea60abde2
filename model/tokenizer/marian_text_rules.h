// The Python string behaviour HF MarianTokenizer v4 relies on, restated for UTF-8 bytes: the
// language-code regex `>>.+<<` (match at the start, sub everywhere) and str.strip().
#ifndef TRANSERVE_MODEL_TOKENIZER_MARIAN_TEXT_RULES_H_
#define TRANSERVE_MODEL_TOKENIZER_MARIAN_TEXT_RULES_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace transerve::marian_text {

// Length of the match of `>>.+<<` (Python re, greedy, `.` excluding '\n') starting exactly at
// `pos`, or 0 when there is none.
size_t MatchLanguageCodeAt(std::string_view text, size_t pos);

// `re.sub(">>.+<<", "", text)`: every non-overlapping match, leftmost first, deleted.
std::string RemoveLanguageCodes(std::string_view text);

// Python's str.strip(): removes leading and trailing characters for which str.isspace() is true
// (ASCII whitespace, \x1c-\x1f, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F,
// U+205F, U+3000). `text` must be valid UTF-8.
std::string_view StripPythonWhitespace(std::string_view text);

}  // namespace transerve::marian_text

#endif  // TRANSERVE_MODEL_TOKENIZER_MARIAN_TEXT_RULES_H_
