#include "text/language_code.h"

#include <unicode/uloc.h>
#include <unicode/ustring.h>

#include <cctype>

#include "absl/strings/ascii.h"

namespace transerve::text {

std::string CanonicalLanguage(std::string_view code) {
  // The language subtag: letters up to the first separator.
  size_t n = 0;
  while (n < code.size() && std::isalpha(static_cast<unsigned char>(code[n]))) ++n;
  if (n < 2 || n > 3) return "";
  if (n < code.size() && code[n] != '-' && code[n] != '_') return "";
  const std::string lang = absl::AsciiStrToLower(std::string(code.substr(0, n)));
  // ICU maps ISO 639-3/-2T codes to their 639-1 form ("deu" -> "de") and deprecated codes
  // to current ones where its alias data knows them.
  char canonical[ULOC_FULLNAME_CAPACITY];
  UErrorCode status = U_ZERO_ERROR;
  uloc_canonicalize(lang.c_str(), canonical, sizeof canonical, &status);
  char base[ULOC_LANG_CAPACITY];
  UErrorCode status2 = U_ZERO_ERROR;
  if (U_SUCCESS(status)) uloc_getLanguage(canonical, base, sizeof base, &status2);
  std::string out = U_SUCCESS(status) && U_SUCCESS(status2) && base[0] != '\0' ? base : lang;
  // The old codes ICU keeps as they are.
  if (out == "iw") return "he";
  if (out == "in") return "id";
  if (out == "ji") return "yi";
  if (out == "jw") return "jv";
  // Norwegian: the macrolanguage and Bokmal, its usual written form, are one for routing.
  if (out == "no") return "nb";
  return out;
}

std::string TargetTokenLanguage(std::string_view piece) {
  if (piece.size() < 6 || piece.substr(0, 2) != ">>" || piece.substr(piece.size() - 2) != "<<") {
    return "";
  }
  return CanonicalLanguage(piece.substr(2, piece.size() - 4));
}

std::string LanguageName(std::string_view code) {
  if (code.empty()) return "";
  const std::string canonical = CanonicalLanguage(code);
  const std::string lang = canonical.empty() ? std::string(code) : canonical;
  UChar name[128];
  UErrorCode status = U_ZERO_ERROR;
  const int32_t length = uloc_getDisplayLanguage(lang.c_str(), "en", name, 128, &status);
  if (U_FAILURE(status) || length <= 0) return lang;
  char utf8[512];
  int32_t utf8_length = 0;
  status = U_ZERO_ERROR;
  u_strToUTF8(utf8, sizeof utf8, &utf8_length, name, length, &status);
  if (U_FAILURE(status)) return lang;
  return std::string(utf8, utf8_length);
}

}  // namespace transerve::text
