#include "text/term_table.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace transerve::text {
namespace {

// The target of the term matched at `pos`, or "-" when none.
std::string At(const TermTable& t, const std::string& text, size_t pos) {
  const TermTable::Match m = t.MatchAt(text, pos);
  if (m.length == 0) return "-";
  return text.substr(pos, m.length) + "=" + *m.target;
}

TEST(TermTable, LongestTermWinsAndWordsAreWhole) {
  const TermTable t({{"cloud", "Wolke"}, {"cloud storage", "Cloud-Speicher"}, {"C++", "C++"}},
                    TermCase::kExact);
  EXPECT_EQ(At(t, "cloud storage here", 0), "cloud storage=Cloud-Speicher");
  EXPECT_EQ(At(t, "cloud storehouse", 0), "cloud=Wolke");
  EXPECT_EQ(At(t, "clouds", 0), "-");
  EXPECT_EQ(At(t, "xcloud", 1), "-");
  EXPECT_EQ(At(t, "_cloud", 1), "-");
  EXPECT_EQ(At(t, "C++17", 0), "C++=C++");  // a non-word edge may touch a word
  EXPECT_EQ(At(t, "Cloud", 0), "-");        // exact: case matters
  EXPECT_EQ(t.size(), 3u);
}

TEST(TermTable, SentenceCaseAndCapitalsCarryOverToTheTarget) {
  const TermTable t({{"cloud", "nube"}, {"Debian", "Debian"}, {"straße", "street"}},
                    TermCase::kSentenceAndCapitals);
  EXPECT_EQ(At(t, "cloud", 0), "cloud=nube");
  EXPECT_EQ(At(t, "Cloud", 0), "Cloud=Nube");
  EXPECT_EQ(At(t, "CLOUD", 0), "CLOUD=NUBE");
  EXPECT_EQ(At(t, "cLoud", 0), "-");
  EXPECT_EQ(At(t, "debian", 0), "-");  // a capitalised term is not lowered
  EXPECT_EQ(At(t, "DEBIAN", 0), "DEBIAN=DEBIAN");
  EXPECT_EQ(At(t, "STRASSE", 0), "STRASSE=STREET");  // capitals as ICU spells them
  EXPECT_EQ(At(t, "Straße", 0), "Straße=Street");
}

TEST(TermTable, TheTermAsWrittenWinsOverAnotherTermsVariant) {
  const TermTable t({{"apple", "Apfel"}, {"Apple", "Apple"}}, TermCase::kSentenceAndCapitals);
  EXPECT_EQ(At(t, "Apple", 0), "Apple=Apple");
  EXPECT_EQ(At(t, "apple", 0), "apple=Apfel");
}

TEST(TermTable, FirstOfTwoEqualSourcesIsKeptAndEmptyOnesDropped) {
  const TermTable t({{"", "x"}, {"disk", "Platte"}, {"disk", "Festplatte"}}, TermCase::kExact);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(At(t, "a disk", 2), "disk=Platte");
  EXPECT_TRUE(TermTable().empty());
  EXPECT_EQ(At(TermTable(), "disk", 0), "-");
}

// Against a naive scan: at every byte of random texts over a small alphabet, the table finds
// what trying every term (longest first, word edges checked) finds.
TEST(TermTable, MatchesANaiveScanOnRandomTexts) {
  std::mt19937 rng(11);
  const std::vector<std::string> words = {"ab", "b", "ba", "a-b", "ä", "ab ba", "b ä"};
  std::vector<Term> terms;
  for (const std::string& w : words) terms.push_back({w, "<" + w + ">"});
  const TermTable t(terms, TermCase::kExact);
  auto word_char = [](char c) { return c == 'a' || c == 'b' || (c & 0x80); };
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int n = std::uniform_int_distribution<int>(1, 12)(rng);
    for (int i = 0; i < n; ++i) {
      const char* parts[] = {"a", "b", " ", "-", "ä"};
      text += parts[std::uniform_int_distribution<int>(0, 4)(rng)];
    }
    for (size_t pos = 0; pos < text.size(); ++pos) {
      if ((text[pos] & 0xC0) == 0x80) continue;  // inside a code point
      std::string want = "-";
      size_t best = 0;
      for (const std::string& w : words) {
        if (w.size() <= best || text.compare(pos, w.size(), w) != 0) continue;
        const bool starts_word = word_char(w.front()), ends_word = word_char(w.back());
        if (starts_word && pos > 0 && word_char(text[pos - 1])) continue;
        if (ends_word && pos + w.size() < text.size() && word_char(text[pos + w.size()])) continue;
        best = w.size();
        want = w + "=<" + w + ">";
      }
      EXPECT_EQ(At(t, text, pos), want) << "'" << text << "' at " << pos;
    }
  }
}

}  // namespace
}  // namespace transerve::text
