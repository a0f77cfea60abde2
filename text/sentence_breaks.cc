#include "text/sentence_breaks.h"

#include <unicode/brkiter.h>
#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/utext.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>

namespace transerve::text {
namespace {

bool IsAsciiNonSpace(char c) { return c > ' ' && c < 0x7F; }

// Abbreviations that stand before a name or a number, so a capital after them starts no
// sentence; ICU's English list (ss=standard) has "Mr." and "Mrs." but lacks these. Only
// languages written in Latin script get them.
constexpr const char* kMoreAbbreviations[] = {
    "Dr.",   "Drs.", "Prof.", "St.",  "Gen.", "Sr.",  "Sra.", "Lt.",    "Sgt.",
    "Capt.", "Col.", "Gov.",  "Sen.", "Rep.", "Rev.", "Fig.", "Figs.",  "Ref.",
    "Dept.", "Mt.",  "Ave.",  "e.g.", "i.e.", "cf.",  "vs.",  "approx."};

// Abbreviations that end no sentence when a number follows ("No. 5"), but may otherwise
// ("No. It was not.").
constexpr const char* kBeforeNumber[] = {"No.",  "Nos.", "Nr.", "Vol.", "Ch.",  "Sec.",
                                         "Art.", "Eq.",  "p.",  "pp.",  "Tab.", "Ex."};

bool UsesLatinAbbreviations(const std::string& language) {
  for (const char* code : {"en", "de", "fr", "es", "it", "pt", "nl", "sv", "da", "nb",
                           "no", "fi", "pl", "cs", "ro", "ca", "hu", "sk", "sl", "hr"}) {
    if (language.rfind(code, 0) == 0 &&
        (language.size() == 2 || language[2] == '_' || language[2] == '-')) {
      return true;
    }
  }
  return false;
}

// The word before the break at `pos` (its trailing spaces skipped, an opening bracket or quote
// dropped) is an abbreviation from the lists above or a single capital initial ("J.").
// ICU's FilteredBreakIteratorBuilder cannot take these: an entry that is also the start of a
// longer one ("Lt." beside "Lt.Cdr.", "A." beside "A.M.") or that holds two full stops
// ("e.g.") never suppresses a break (measured, ICU 72).
bool AfterAbbreviation(std::string_view line, size_t pos) {
  size_t end = pos;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && line[begin - 1] != ' ') --begin;
  while (begin < end && std::string_view("(\"'[").find(line[begin]) != std::string_view::npos) {
    ++begin;
  }
  const std::string_view word = line.substr(begin, end - begin);
  if (word.size() == 2 && word[0] >= 'A' && word[0] <= 'Z' && word[1] == '.') return true;
  for (const char* abbreviation : kMoreAbbreviations) {
    if (word == abbreviation) return true;
  }
  if (pos < line.size() && line[pos] >= '0' && line[pos] <= '9') {
    for (const char* abbreviation : kBeforeNumber) {
      if (word == abbreviation) return true;
    }
  }
  return false;
}

// "Where?" she asked: ICU ends a sentence after ? or ! whatever follows, unlike after a full
// stop. True when the break at `pos` follows ?/! (and closing quotes or brackets, then
// spaces) and the next word starts lower case.
bool LowerCaseAfterQuestion(std::string_view line, size_t pos) {
  size_t before = pos;
  while (before > 0 && line[before - 1] == ' ') --before;
  while (before > 0 && std::string_view("\"')]").find(line[before - 1]) != std::string_view::npos) {
    --before;
  }
  if (before == 0 || before == pos || (line[before - 1] != '?' && line[before - 1] != '!')) {
    return false;
  }
  const auto* s = reinterpret_cast<const uint8_t*>(line.data() + pos);
  const int32_t n = static_cast<int32_t>(std::min<size_t>(4, line.size() - pos));
  int32_t i = 0;
  UChar32 c;
  U8_NEXT(s, i, n, c);
  return c >= 0 && u_islower(c);
}

// Building an iterator loads rule data (tens of microseconds); each thread keeps one per
// language and rule set and only points it at new text.
icu::BreakIterator* CachedIterator(const std::string& language, BreakRules rules) {
  thread_local std::map<std::pair<std::string, BreakRules>, std::unique_ptr<icu::BreakIterator>>
      cache;
  auto& slot = cache[{language, rules}];
  if (slot) return slot.get();
  UErrorCode status = U_ZERO_ERROR;
  icu::Locale locale(language.c_str());
  if (locale.isBogus()) locale = icu::Locale::getRoot();
  if (rules != BreakRules::kIcu) locale.setKeywordValue("ss", "standard", status);
  if (U_FAILURE(status)) status = U_ZERO_ERROR;  // no suppressions then; plain rules still hold
  slot.reset(icu::BreakIterator::createSentenceInstance(locale, status));
  if (U_FAILURE(status)) {
    status = U_ZERO_ERROR;
    slot.reset(icu::BreakIterator::createSentenceInstance(icu::Locale::getRoot(), status));
  }
  if (U_FAILURE(status)) slot.reset();
  return slot.get();
}

}  // namespace

std::vector<size_t> SentenceStarts(std::string_view line, const std::string& language,
                                   BreakRules rules) {
  std::vector<size_t> starts;
  // ICU's offsets are 32-bit; a line beyond that stays one sentence (CutLongSentence cuts it).
  if (line.size() < 2 || line.size() > static_cast<size_t>(INT32_MAX)) return starts;
  icu::BreakIterator* it = CachedIterator(language, rules);
  if (it == nullptr) return starts;
  UErrorCode status = U_ZERO_ERROR;
  icu::LocalUTextPointer text(
      utext_openUTF8(nullptr, line.data(), static_cast<int64_t>(line.size()), &status));
  it->setText(text.getAlias(), status);
  if (U_FAILURE(status)) return starts;
  const bool latin = UsesLatinAbbreviations(language);
  it->first();
  for (int32_t b = it->next(); b != icu::BreakIterator::DONE; b = it->next()) {
    const auto pos = static_cast<size_t>(b);
    if (pos == 0 || pos >= line.size()) continue;
    if (rules >= BreakRules::kIcuSuppressedMore && latin && AfterAbbreviation(line, pos)) continue;
    if (rules == BreakRules::kIcuSuppressedMoreJoined &&
        ((IsAsciiNonSpace(line[pos - 1]) && IsAsciiNonSpace(line[pos])) ||
         LowerCaseAfterQuestion(line, pos))) {
      continue;
    }
    starts.push_back(pos);
  }
  // The iterator keeps a pointer into `line`; point it at nothing before the view goes away.
  it->setText(icu::UnicodeString());
  return starts;
}

}  // namespace transerve::text
