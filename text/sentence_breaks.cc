#include "text/sentence_breaks.h"

#include <unicode/brkiter.h>
#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/ures.h>
#include <unicode/utext.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "text/abbreviations.h"

namespace transerve::text {
namespace {

constexpr size_t kMaxCachedLanguages = 64;

bool IsAsciiNonSpace(char c) { return c > ' ' && c < 0x7F; }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

UChar32 CodePointAt(std::string_view s, size_t pos) {
  if (pos >= s.size()) return -1;
  const auto* bytes = reinterpret_cast<const uint8_t*>(s.data() + pos);
  const int32_t n = static_cast<int32_t>(std::min<size_t>(4, s.size() - pos));
  int32_t i = 0;
  UChar32 c;
  U8_NEXT(bytes, i, n, c);
  return c;
}

// Building an iterator loads rule data (tens of microseconds); each thread keeps one per
// language and rule set and only points it at new text.
icu::BreakIterator* CachedIterator(const std::string& language, bool icu_suppressions) {
  thread_local std::map<std::pair<std::string, bool>, std::unique_ptr<icu::BreakIterator>> cache;
  // The language comes from requests: bound what a stream of made-up ones can hold.
  if (cache.size() >= kMaxCachedLanguages && !cache.count({language, icu_suppressions})) {
    cache.clear();
  }
  auto& slot = cache[{language, icu_suppressions}];
  if (slot) return slot.get();
  UErrorCode status = U_ZERO_ERROR;
  icu::Locale locale(language.c_str());
  if (locale.isBogus()) locale = icu::Locale::getRoot();
  if (icu_suppressions) locale.setKeywordValue("ss", "standard", status);
  if (U_FAILURE(status)) status = U_ZERO_ERROR;  // no suppressions then; plain rules still hold
  slot.reset(icu::BreakIterator::createSentenceInstance(locale, status));
  if (U_FAILURE(status)) {
    status = U_ZERO_ERROR;
    slot.reset(icu::BreakIterator::createSentenceInstance(icu::Locale::getRoot(), status));
  }
  if (U_FAILURE(status)) slot.reset();
  return slot.get();
}

// The abbreviation list ICU ships for the locale (what ss=standard uses), read from its data.
const std::set<std::string, std::less<>>& IcuLocaleList(const std::string& language) {
  thread_local std::map<std::string, std::set<std::string, std::less<>>> cache;
  if (cache.size() >= kMaxCachedLanguages && !cache.count(language)) cache.clear();
  auto [it, inserted] = cache.try_emplace(language);
  if (!inserted) return it->second;
  UErrorCode status = U_ZERO_ERROR;
  const std::string tree = std::string(U_ICUDATA_NAME) + "-brkitr";
  UResourceBundle* bundle = ures_open(tree.c_str(), language.c_str(), &status);
  UResourceBundle* exceptions = ures_getByKey(bundle, "exceptions", nullptr, &status);
  UResourceBundle* list = ures_getByKey(exceptions, "SentenceBreak", nullptr, &status);
  while (U_SUCCESS(status) && ures_hasNext(list)) {
    int32_t length = 0;
    const UChar* word = ures_getNextString(list, &length, nullptr, &status);
    if (U_FAILURE(status)) break;
    std::string utf8;
    icu::UnicodeString(word, length).toUTF8String(utf8);
    it->second.insert(std::move(utf8));
  }
  ures_close(list);
  ures_close(exceptions);
  ures_close(bundle);
  return it->second;
}

// The word before the break at `pos`: its trailing spaces skipped, an opening bracket or quote
// dropped.
std::string_view WordBefore(std::string_view line, size_t pos) {
  size_t end = pos;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && line[begin - 1] != ' ') --begin;
  while (begin < end && std::string_view("(\"'[").find(line[begin]) != std::string_view::npos) {
    ++begin;
  }
  return line.substr(begin, end - begin);
}

// ICU's list as a whole-word test: ICU's own filter matches entries as suffixes ("Q." keeps
// "FAQ." from ending a sentence, German "Test." any "...test.") and ignores entries with two
// full stops ("e.g.") or that start a longer one ("Lt." beside "Lt.Cdr.").
bool InIcuLocaleList(std::string_view line, size_t pos, const std::string& language) {
  const auto& list = IcuLocaleList(language);
  return list.find(WordBefore(line, pos)) != list.end();
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
  const UChar32 c = CodePointAt(line, pos);
  return c >= 0 && u_islower(c);
}

// The curated test: an abbreviation of the language, a single-letter initial, or (where the
// language writes ordinals so) a number of up to three digits with a full stop.
bool AfterCuratedAbbreviation(std::string_view line, size_t pos, const Abbreviations& list) {
  const std::string_view word = WordBefore(line, pos);
  if (word.size() < 2 || word.back() != '.') return false;
  const std::string_view stem = word.substr(0, word.size() - 1);
  if (list.single_letters && stem.size() == 1 &&
      ((stem[0] >= 'A' && stem[0] <= 'Z') || (stem[0] >= 'a' && stem[0] <= 'z'))) {
    return true;
  }
  if (list.always.count(word)) return true;
  if (list.before_number.count(word) && pos < line.size() && IsAsciiDigit(line[pos])) return true;
  if (list.ordinals && stem.size() <= 3 && std::all_of(stem.begin(), stem.end(), IsAsciiDigit)) {
    // "am 3. Oktober", not "im Jahr 2020. Dann" (four digits) nor "Seite 3. 4 Leute".
    return pos < line.size() && !IsAsciiDigit(line[pos]);
  }
  return false;
}

}  // namespace

std::vector<size_t> SentenceStarts(std::string_view line, const std::string& language,
                                   BreakRules rules) {
  std::vector<size_t> starts;
  // ICU's offsets are 32-bit; a line beyond that stays one sentence (CutLongSentence cuts it).
  if (line.size() < 2 || line.size() > static_cast<size_t>(INT32_MAX)) return starts;
  icu::BreakIterator* it = CachedIterator(language, rules == BreakRules::kIcuSuppressed);
  if (it == nullptr) return starts;
  UErrorCode status = U_ZERO_ERROR;
  icu::LocalUTextPointer text(
      utext_openUTF8(nullptr, line.data(), static_cast<int64_t>(line.size()), &status));
  it->setText(text.getAlias(), status);
  if (U_FAILURE(status)) return starts;
  const Abbreviations& curated = AbbreviationsFor(language);
  it->first();
  for (int32_t b = it->next(); b != icu::BreakIterator::DONE; b = it->next()) {
    const auto pos = static_cast<size_t>(b);
    if (pos == 0 || pos >= line.size()) continue;
    if (rules == BreakRules::kIcuLocaleList && InIcuLocaleList(line, pos, language)) continue;
    if (rules >= BreakRules::kIcuCurated && AfterCuratedAbbreviation(line, pos, curated)) {
      continue;
    }
    if (rules == BreakRules::kIcuCuratedJoined &&
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
