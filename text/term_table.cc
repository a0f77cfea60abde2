#include "text/term_table.h"

#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <unordered_set>

#include "text/utf8_chars.h"

namespace transerve::text {
namespace {

std::string Upper(const std::string& s) {
  std::string out;
  icu::UnicodeString::fromUTF8(s).toUpper(icu::Locale::getRoot()).toUTF8String(out);
  return out;
}

// The first code point in title case, the rest as it is.
std::string Capitalised(const std::string& s) {
  size_t length = 0;
  const UChar32 c = CharAt(s, 0, &length);
  if (c < 0) return s;
  std::string out;
  icu::UnicodeString(u_totitle(c)).toUTF8String(out);
  out.append(s, length, std::string::npos);
  return out;
}

bool StartsLower(const std::string& s) { return u_islower(CharAt(s, 0)); }

}  // namespace

std::string TermProblem(std::string_view term) {
  if (term.empty()) return "is empty";
  size_t pos = 0;
  UChar32 first = -1, last = -1;
  while (pos < term.size()) {
    size_t length = 0;
    const UChar32 c = CharAt(term, pos, &length);
    if (c < 0) return "is not valid UTF-8";
    // C0 and C1 controls (tab, newlines) and Unicode's line and paragraph separators.
    if (c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x2028 || c == 0x2029) {
      return "holds a control character or line break";
    }
    if (first < 0) first = c;
    last = c;
    pos += length;
  }
  if (u_isUWhiteSpace(first) || u_isUWhiteSpace(last)) return "starts or ends with white space";
  return "";
}

std::shared_ptr<const TermTable> KeptTerms(const std::vector<std::string>& terms) {
  std::vector<Term> kept;
  for (const std::string& term : terms) kept.push_back({term, term});
  return std::make_shared<TermTable>(kept, TermCase::kExact);
}

TermTable::TermTable(const std::vector<Term>& terms, TermCase matching) {
  std::unordered_set<std::string> sources;
  std::vector<Form> exact, variants;
  for (const Term& t : terms) {
    if (t.source.empty() || !sources.insert(t.source).second) continue;
    exact.push_back({t.source, t.target});
    if (matching != TermCase::kSentenceAndCapitals) continue;
    if (StartsLower(t.source)) {
      variants.push_back(
          {Capitalised(t.source), StartsLower(t.target) ? Capitalised(t.target) : t.target});
    }
    variants.push_back({Upper(t.source), Upper(t.target)});
  }
  terms_ = exact.size();
  // A spelling taken once: a term as written before any variant that spells the same.
  std::unordered_set<std::string> patterns;
  for (auto* list : {&exact, &variants}) {
    for (Form& f : *list) {
      if (patterns.insert(f.pattern).second) forms_.push_back(std::move(f));
    }
  }
  std::stable_sort(forms_.begin(), forms_.end(), [](const Form& a, const Form& b) {
    return a.pattern.size() > b.pattern.size();
  });
  for (size_t i = 0; i < forms_.size(); ++i) {
    by_first_char_[CharAt(forms_[i].pattern, 0)].push_back(i);
  }
}

TermTable::Match TermTable::MatchAt(std::string_view text, size_t pos) const {
  if (forms_.empty()) return {};
  const auto it = by_first_char_.find(CharAt(text, pos));
  if (it == by_first_char_.end()) return {};
  const bool after_word = IsTermChar(CharBefore(text, pos));
  for (const size_t i : it->second) {
    const std::string& p = forms_[i].pattern;
    if (text.substr(pos, p.size()) != p) continue;
    if (after_word && IsTermChar(CharAt(p, 0))) continue;
    if (IsTermChar(CharBefore(p, p.size())) && IsTermChar(CharAt(text, pos + p.size()))) continue;
    return {p.size(), &forms_[i].target};
  }
  return {};
}

}  // namespace transerve::text
