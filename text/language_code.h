// Language codes as requests, model files and the detector write them ("de", "deu", "de_DE",
// "pt-BR", "iw"), turned into one form so they compare: ISO 639-1 where one exists, else the
// ISO 639-3 code, lower case, without region or script.
#pragma once

#include <string>
#include <string_view>

namespace transerve::text {

// "" when `code` is empty or not a language code (letters, 2 or 3 of them, then optional
// "-"/"_" parts). "mul" (multiple languages) stays "mul".
std::string CanonicalLanguage(std::string_view code);

// The language of a multilingual model's target token (">>deu<<", ">>pt_br<<"), canonical;
// "" when `piece` is not such a token.
std::string TargetTokenLanguage(std::string_view piece);

// The language's name in English, from ICU's display names ("de" -> "German", "nb" ->
// "Norwegian Bokmål", "deu" -> "German"); the code itself when ICU has no name for it, "" for "".
std::string LanguageName(std::string_view code);

}  // namespace transerve::text
