// Per-language lists of words with a full stop that end no sentence, for SentenceStarts:
// ours, short and chosen by hand, because ICU's (ss=standard) also holds ordinary words that
// do end sentences ("Ok.", "Go.", "Is." in English; "Test." in German).
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>

namespace transerve::text {

struct Abbreviations {
  std::set<std::string, std::less<>> always;         // "Dr.", "e.g.": never end a sentence
  std::set<std::string, std::less<>> before_number;  // "No.", "p.": not when a digit follows
  bool single_letters = false;  // "J." or "z." (Latin-script languages): an initial
  bool ordinals = false;        // "3." before a word is an ordinal ("am 3. Oktober")
};

// The list for an ICU locale ("en", "de_AT", "pt-BR"), by its language; empty for a language
// without one (Japanese and Chinese need none: their full stop is never an abbreviation's).
const Abbreviations& AbbreviationsFor(std::string_view language);

}  // namespace transerve::text
