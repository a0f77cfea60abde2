#include "text/sentence_splitter.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace transerve::text {
namespace {

std::string Slice(std::string_view s, ByteRange r) {
  return std::string(s.substr(r.begin, r.end - r.begin));
}

// The pieces as "[sentence]" and "{layout}" in order, after checking that they cover `text`
// exactly, in order, with no empty piece and no two layout pieces side by side.
std::string Render(std::string_view text, const std::vector<TextPiece>& pieces) {
  std::string joined, rendered;
  size_t expected_begin = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const TextPiece& p = pieces[i];
    EXPECT_EQ(p.range.begin, expected_begin) << "piece " << i;
    EXPECT_LT(p.range.begin, p.range.end) << "piece " << i;
    if (i > 0) {
      EXPECT_FALSE(!p.translate && !pieces[i - 1].translate) << "piece " << i;
    }
    expected_begin = p.range.end;
    const std::string part = Slice(text, p.range);
    joined += part;
    rendered += p.translate ? '[' : '{';
    rendered += part;
    rendered += p.translate ? ']' : '}';
  }
  EXPECT_EQ(joined, text);
  return rendered;
}

std::string Split(std::string_view text, const std::string& language = "en") {
  return Render(text, SplitSentences(text, {.split_sentences = true, .language = language}));
}

std::string SplitLines(std::string_view text) {
  return Render(text, SplitSentences(text, {.split_sentences = false, .language = "en"}));
}

TEST(SplitSentences, EmptyInputGivesNoPieces) { EXPECT_EQ(Split(""), ""); }

TEST(SplitSentences, OnlyWhitespaceIsOneLayoutPiece) {
  EXPECT_EQ(Split(" \t\r\n\n  \xC2\xA0\xE3\x80\x80"), "{ \t\r\n\n  \xC2\xA0\xE3\x80\x80}");
}

TEST(SplitSentences, OnlyBulletsAndNumbersAreLayout) {
  EXPECT_EQ(Split("- \n* \n1. \n(iv)\n\xE2\x80\xA2"), "{- \n* \n1. \n(iv)\n\xE2\x80\xA2}");
}

TEST(SplitSentences, TwoSentencesKeepTheSpaceBetweenAsLayout) {
  EXPECT_EQ(Split("The cat sat. The dog ran."), "[The cat sat.]{ }[The dog ran.]");
}

TEST(SplitSentences, LeadingAndTrailingWhitespaceIsLayout) {
  EXPECT_EQ(Split("   Hello there.   How are you?  "),
            "{   }[Hello there.]{   }[How are you?]{  }");
}

TEST(SplitSentences, UnixLineBreaksAreHardBoundaries) {
  EXPECT_EQ(Split("A line without a stop\nand its continuation"),
            "[A line without a stop]{\n}[and its continuation]");
}

TEST(SplitSentences, WindowsAndOldMacLineBreaks) {
  EXPECT_EQ(Split("One.\r\nTwo.\rThree."), "[One.]{\r\n}[Two.]{\r}[Three.]");
}

TEST(SplitSentences, UnicodeLineAndParagraphSeparators) {
  EXPECT_EQ(Split("One\xE2\x80\xA8Two\xE2\x80\xA9Three"),
            "[One]{\xE2\x80\xA8}[Two]{\xE2\x80\xA9}[Three]");
}

TEST(SplitSentences, BlankLinesBetweenParagraphsAreOneLayoutPiece) {
  EXPECT_EQ(Split("First paragraph.\n\n  \n\nSecond paragraph."),
            "[First paragraph.]{\n\n  \n\n}[Second paragraph.]");
}

TEST(SplitSentences, IndentationIsLayout) {
  EXPECT_EQ(Split("Intro:\n    indented code line\n\tTabbed line."),
            "[Intro:]{\n    }[indented code line]{\n\t}[Tabbed line.]");
}

TEST(SplitSentences, TabsInsideALineSeparateCells) {
  EXPECT_EQ(Split("Name\tValue\t\tNote here"), "[Name]{\t}[Value]{\t\t}[Note here]");
}

TEST(SplitSentences, BulletsAtLineStartAreLayout) {
  EXPECT_EQ(
      Split("- one\n* two\n\xE2\x80\xA2 three\n\xC2\xB7 four\n\xE2\x80\x93 five"),
      "{- }[one]{\n* }[two]{\n\xE2\x80\xA2 }[three]{\n\xC2\xB7 }[four]{\n\xE2\x80\x93 }[five]");
}

TEST(SplitSentences, ListNumbersAtLineStartAreLayout) {
  EXPECT_EQ(Split("1. Install it.\n2) Run it.\na) Check it.\n(iv) Done.\n10. Last."),
            "{1. }[Install it.]{\n2) }[Run it.]{\na) }[Check it.]{\n(iv) }[Done.]{\n10. }[Last.]");
}

TEST(SplitSentences, IndentedNestedListItem) {
  EXPECT_EQ(Split("  - 1.2. Nested item. Second sentence."),
            "{  - 1.2. }[Nested item.]{ }[Second sentence.]");
}

TEST(SplitSentences, MarkersOnlyAtLineStartAndFollowedBySpace) {
  EXPECT_EQ(Split("-5 degrees today. Use 1. as a value - or not."),
            "[-5 degrees today.]{ }[Use 1. as a value - or not.]");
  EXPECT_EQ(Split("*emphasis* matters"), "[*emphasis* matters]");
  EXPECT_EQ(Split("2020 was long."), "[2020 was long.]");
}

TEST(SplitSentences, CommonAbbreviationsDoNotEndSentences) {
  EXPECT_EQ(Split("Dr. Smith came, e.g. on Monday. Fig. 3 shows it. See No. 5 vs. No. 6."),
            "[Dr. Smith came, e.g. on Monday.]{ }[Fig. 3 shows it.]{ }[See No. 5 vs. No. 6.]");
  EXPECT_EQ(Split("Bring pens, paper, etc. to class. Use a pen, i.e. a blue one."),
            "[Bring pens, paper, etc. to class.]{ }[Use a pen, i.e. a blue one.]");
}

TEST(SplitSentences, InitialsDoNotEndSentences) {
  EXPECT_EQ(Split("J. R. R. Tolkien wrote it. It is long."),
            "[J. R. R. Tolkien wrote it.]{ }[It is long.]");
}

TEST(SplitSentences, NumbersAndVersionsStayInOneSentence) {
  EXPECT_EQ(Split("Version 2.0 is out. It costs $4.99 or 3.5 percent less."),
            "[Version 2.0 is out.]{ }[It costs $4.99 or 3.5 percent less.]");
}

TEST(SplitSentences, FileNamesUrlsAndMailAddressesStayWhole) {
  EXPECT_EQ(Split("See config.ini for it. Open https://x.org/a?Q=1&B=Yes!Now now. Mail a.b@c.de."),
            "[See config.ini for it.]{ }[Open https://x.org/a?Q=1&B=Yes!Now now.]{ }[Mail "
            "a.b@c.de.]");
  EXPECT_EQ(Split("The log is in /var/log/App.Log today. Fine."),
            "[The log is in /var/log/App.Log today.]{ }[Fine.]");
}

TEST(SplitSentences, QuestionBeforeLowerCaseContinues) {
  EXPECT_EQ(Split("\"Where is it?\" she asked. Nobody knew!"),
            "[\"Where is it?\" she asked.]{ }[Nobody knew!]");
}

TEST(SplitSentences, German) {
  EXPECT_EQ(Split("Herr Dr. M\xC3\xBCller kommt heute. Er bringt 3 B\xC3\xBC"
                  "cher mit.",
                  "de"),
            "[Herr Dr. M\xC3\xBCller kommt heute.]{ }[Er bringt 3 B\xC3\xBC"
            "cher mit.]");
}

TEST(SplitSentences, GermanOrdinalsAndShortForms) {
  EXPECT_EQ(Split("Er kam am 3. Oktober, z. B. mit ca. 5 Leuten. Das ist ein Test. Gut.", "de"),
            "[Er kam am 3. Oktober, z. B. mit ca. 5 Leuten.]{ }[Das ist ein Test.]{ }[Gut.]");
  // The region does not matter, only the language.
  EXPECT_EQ(Split("Wir sind im 21. Jahrhundert. Ja.", "de_AT"),
            "[Wir sind im 21. Jahrhundert.]{ }[Ja.]");
  // A year is no ordinal.
  EXPECT_EQ(Split("Im Jahr 2020. Dann kam 2021.", "de"), "[Im Jahr 2020.]{ }[Dann kam 2021.]");
}

TEST(SplitSentences, OrdinalsOnlyWhereTheLanguageWritesThem) {
  EXPECT_EQ(Split("He counted to 10. Then he stopped."),
            "[He counted to 10.]{ }[Then he stopped.]");
}

TEST(SplitSentences, NumberAbbreviationsOnlyBeforeANumber) {
  EXPECT_EQ(Split("Room No. 12 is free. No. It is not."),
            "[Room No. 12 is free.]{ }[No.]{ }[It is not.]");
}

TEST(SplitSentences, AbbreviationsAreWholeWords) {
  // ICU's own filter keeps "FAQ." from ending a sentence because its list holds "Q.".
  EXPECT_EQ(Split("Read the FAQ. Questions are welcome."),
            "[Read the FAQ.]{ }[Questions are welcome.]");
  // "St." is left out on purpose: it ends sentences as "street".
  EXPECT_EQ(Split("He lives on Baker St. The house is red."),
            "[He lives on Baker St.]{ }[The house is red.]");
}

TEST(SplitSentences, FrenchTitles) {
  EXPECT_EQ(Split("M. Dupont et Mme. Curie sont l\xC3\xA0. Ils parlent.", "fr"),
            "[M. Dupont et Mme. Curie sont l\xC3\xA0.]{ }[Ils parlent.]");
}

TEST(SplitSentences, HundredKilobyteLineWithoutSpacesIsOneSentence) {
  std::mt19937 rng(5);
  std::string text;
  while (text.size() < 100000) text += static_cast<char>('a' + rng() % 26);
  const auto pieces = SplitSentences(text, {});
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_TRUE(pieces[0].translate);
  EXPECT_EQ(pieces[0].range, (ByteRange{0, text.size()}));
}

TEST(SplitSentences, French) {
  EXPECT_EQ(Split("C'est l'\xC3\xA9t\xC3\xA9 ! Il fait chaud ? Oui.", "fr"),
            "[C'est l'\xC3\xA9t\xC3\xA9 !]{ }[Il fait chaud ?]{ }[Oui.]");
}

TEST(SplitSentences, JapaneseFullStopsNeedNoSpace) {
  EXPECT_EQ(Split("今日は晴れです。明日は雨です。", "ja"), "[今日は晴れです。][明日は雨です。]");
}

TEST(SplitSentences, ChineseStopsAndMarks) {
  EXPECT_EQ(Split("你好。我很好！你呢？", "zh"), "[你好。][我很好！][你呢？]");
}

TEST(SplitSentences, EmojiAndCombiningMarksStayInTheirSentence) {
  // "e" + combining acute, a family emoji joined by ZWJ, a flag.
  const std::string text =
      "Cafe\xCC\x81 time \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7"
      ". Next \xF0\x9F\x87\xA9\xF0\x9F\x87\xAA!";
  EXPECT_EQ(
      Split(text),
      "[Cafe\xCC\x81 time \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91"
      "\xA7.]{ }[Next \xF0\x9F\x87\xA9\xF0\x9F\x87\xAA!]");
}

TEST(SplitSentences, PiecesWithoutLettersOrDigitsAreLayout) {
  EXPECT_EQ(Split("Title\n-----\n***\n\xF0\x9F\x8E\x89\nText."),
            "[Title]{\n-----\n***\n\xF0\x9F\x8E\x89\n}[Text.]");
}

TEST(SplitSentences, NonBreakingAndIdeographicSpacesAreTrimmed) {
  EXPECT_EQ(Split("\xC2\xA0Hi there.\xE3\x80\x80"), "{\xC2\xA0}[Hi there.]{\xE3\x80\x80}");
}

TEST(SplitSentences, InvalidUtf8StillCoversTheText) {
  EXPECT_EQ(Split("Bad \xFF\xC3 bytes. Fine \xE2\x82."),
            "[Bad \xFF\xC3 bytes.]{ }[Fine \xE2\x82.]");
}

TEST(SplitSentences, WithoutSentenceSplittingEachLineIsOnePiece) {
  EXPECT_EQ(SplitLines("  - One. Two.  \r\n\nThree? Four!"),
            "{  - }[One. Two.]{  \r\n\n}[Three? Four!]");
}

TEST(SplitSentences, UnknownLanguageFallsBackToRootRules) {
  EXPECT_EQ(Split("One. Two.", "xx-nonsense"), "[One.]{ }[Two.]");
}

TEST(SplitSentences, ManyMadeUpLanguagesStillSplit) {
  // More languages than the iterator cache holds: it starts over and keeps working.
  for (int i = 0; i < 150; ++i) {
    std::string language = "x";
    language += std::to_string(i);
    EXPECT_EQ(Split("One. Two.", language), "[One.]{ }[Two.]");
  }
  EXPECT_EQ(Split("Dr. Who. Yes.", "en"), "[Dr. Who.]{ }[Yes.]");
}

// Random documents from sentences that any rule set splits the same way, joined by random
// layout: the pieces must give back the text and exactly the sentences put in.
TEST(SplitSentences, RandomDocumentsRoundTripWithTheRightSentenceCount) {
  const std::vector<std::string> words = {"model",
                                          "server",
                                          "token",
                                          "batch",
                                          "river",
                                          "Paris",
                                          "gr\xC3\xBC\xC3\x9F"
                                          "e",
                                          "caf\xC3\xA9",
                                          "42",
                                          "data"};
  const std::vector<std::string> stops = {".", "!", "?"};
  const std::vector<std::string> between = {" ",     "  ",       "\t",   "\n",    "\r\n",
                                            "\r",    "\n\n",     "\n- ", "\n* ",  "\n\xE2\x80\xA2 ",
                                            "\n3. ", "\n  (b) ", "\n\t", " \n \n"};
  std::mt19937 rng(1234);
  auto pick = [&](const auto& v) { return v[rng() % v.size()]; };
  for (int doc = 0; doc < 300; ++doc) {
    std::string text = rng() % 2 ? pick(between) : "";
    std::vector<std::string> sentences;
    const int count = 1 + static_cast<int>(rng() % 12);
    for (int s = 0; s < count; ++s) {
      std::string sentence = "The";
      const int n = 1 + static_cast<int>(rng() % 8);
      for (int w = 0; w < n; ++w) {
        sentence += ' ';
        sentence += pick(words);
      }
      sentence += pick(stops);
      sentences.push_back(sentence);
      text += sentence;
      text += s + 1 < count ? pick(between) : (rng() % 2 ? pick(between) : "");
    }
    const auto pieces = SplitSentences(text, {});
    Render(text, pieces);
    std::vector<std::string> found;
    for (const TextPiece& p : pieces) {
      if (p.translate) found.push_back(Slice(text, p.range));
    }
    EXPECT_EQ(found, sentences) << text;
  }
}

// CutLongSentence with units = bytes (or words), checked for coverage and the limit.
std::vector<std::string> Cut(std::string_view s, int max_units,
                             const std::function<int(std::string_view)>& units) {
  const std::vector<ByteRange> parts = CutLongSentence(s, max_units, units);
  std::vector<std::string> out;
  size_t expected = 0;
  std::string joined;
  for (const ByteRange& r : parts) {
    EXPECT_EQ(r.begin, expected);
    EXPECT_LT(r.begin, r.end);
    expected = r.end;
    out.push_back(Slice(s, r));
    joined += out.back();
  }
  EXPECT_EQ(joined, s);
  return out;
}

int Bytes(std::string_view s) { return static_cast<int>(s.size()); }

int CodePoints(std::string_view s) {
  int n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

TEST(CutLongSentence, ShortSentenceIsOnePart) {
  EXPECT_EQ(Cut("Fits easily.", 100, Bytes), (std::vector<std::string>{"Fits easily."}));
  EXPECT_TRUE(CutLongSentence("", 10, Bytes).empty());
}

TEST(CutLongSentence, PrefersClausePunctuationOverSpaces) {
  EXPECT_EQ(Cut("We came, we saw the city and we left", 20, Bytes),
            (std::vector<std::string>{"We came, ", "we saw the city and ", "we left"}));
  EXPECT_EQ(
      Cut("First part; second part: third \xE2\x80\x94 fourth", 15, Bytes),
      (std::vector<std::string>{"First part; ", "second part: ", "third \xE2\x80\x94 ", "fourth"}));
}

TEST(CutLongSentence, FallsBackToSpacesThenCharacters) {
  EXPECT_EQ(Cut("aaaa bbbb cccc dddd", 10, Bytes),
            (std::vector<std::string>{"aaaa bbbb ", "cccc dddd"}));
  EXPECT_EQ(Cut("abcdefghij", 4, Bytes), (std::vector<std::string>{"abcd", "efgh", "ij"}));
}

TEST(CutLongSentence, CutsCjkAfterWideCommas) {
  EXPECT_EQ(Cut("我们来了，我们看见了，我们走了", 6, CodePoints),
            (std::vector<std::string>{"我们来了，", "我们看见了，", "我们走了"}));
}

TEST(CutLongSentence, NeverCutsInsideACodePoint) {
  // Four-byte emoji with a limit of 5 bytes: one emoji a part, never a broken one.
  const std::string s = "\xF0\x9F\x98\x80\xF0\x9F\x98\x81\xF0\x9F\x98\x82";
  EXPECT_EQ(Cut(s, 5, Bytes),
            (std::vector<std::string>{"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x81", "\xF0\x9F\x98\x82"}));
}

TEST(CutLongSentence, CharacterOverTheLimitOnItsOwnIsOnePart) {
  // A callback that counts every character as 5 units against a limit of 2.
  const auto heavy = [](std::string_view s) { return 5 * CodePoints(s); };
  EXPECT_EQ(Cut("ab\xC3\xA9", 2, heavy), (std::vector<std::string>{"a", "b", "\xC3\xA9"}));
  EXPECT_EQ(Cut("xyz", 0, Bytes), (std::vector<std::string>{"x", "y", "z"}));
}

TEST(CutLongSentence, HundredKilobytesWithoutSpacesIsCutInFewCalls) {
  std::mt19937 rng(99);
  std::string s;
  while (s.size() < 100000) s += static_cast<char>('a' + rng() % 26);
  int calls = 0;
  const auto counting = [&](std::string_view part) {
    ++calls;
    return Bytes(part);
  };
  const auto parts = Cut(s, 512, counting);
  for (const std::string& p : parts) EXPECT_LE(Bytes(p), 512);
  EXPECT_EQ(parts.size(), (s.size() + 511) / 512);        // every part full but the last
  EXPECT_LT(calls, 40 * static_cast<int>(parts.size()));  // O(log n) calls a part
}

// Random sentences of words, punctuation and multi-byte characters, with a token-like
// callback (a unit per word plus one per 4 bytes): every part within the limit, full
// coverage, and parts that end at punctuation or spaces whenever the text has them.
TEST(CutLongSentence, RandomSentencesStayWithinTheLimit) {
  const std::vector<std::string> pieces = {"word",
                                           "x",
                                           "longerword",
                                           ",",
                                           ";",
                                           ":",
                                           " - ",
                                           "\xC3\xA9t\xC3\xA9",
                                           "\xE4\xB8\xAD",
                                           "\xF0\x9F\x98\x80",
                                           "."};
  const auto tokens = [](std::string_view s) {
    int words = 0;
    bool in_word = false;
    for (char c : s) {
      const bool space = c == ' ';
      words += !space && !in_word;
      in_word = !space;
    }
    return words + static_cast<int>(s.size()) / 4;
  };
  std::mt19937 rng(2024);
  for (int round = 0; round < 200; ++round) {
    const bool spaces = round % 2 == 0;
    std::string s;
    const int n = 1 + static_cast<int>(rng() % 400);
    for (int i = 0; i < n; ++i) {
      s += pieces[rng() % pieces.size()];
      if (spaces && rng() % 2) s += ' ';
    }
    const int limit = 1 + static_cast<int>(rng() % 40);
    const auto parts = Cut(s, limit, tokens);
    size_t offset = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      // A part over the limit is a single character that alone exceeds it.
      if (tokens(parts[i]) > limit) {
        EXPECT_EQ(CodePoints(parts[i]), 1) << parts[i];
      }
      // Each piece is whole: no part starts with a UTF-8 continuation byte.
      EXPECT_NE(static_cast<unsigned char>(parts[i][0]) & 0xC0, 0x80);
      // A part not ending after a space had no space to end at past its first quarter (the
      // rest of its length is what a cut there would have given away).
      const char last = parts[i].back();
      if (i + 1 < parts.size() && last != ' ' && static_cast<unsigned char>(last) < 0x80) {
        EXPECT_EQ(parts[i].find(' ', parts[i].size() / 4), std::string::npos)
            << "[" << parts[i] << "]";
      }
      // A part that ends at a plain space (not after clause punctuation) had no clause end
      // past a quarter of what would have fit: the cutter prefers those.
      const size_t text_end = parts[i].find_last_not_of(' ') + 1;
      if (i + 1 < parts.size() && last == ' ' && text_end > 0 &&
          std::string_view(",;:.-").find(parts[i][text_end - 1]) == std::string_view::npos) {
        const std::string rest = s.substr(offset);
        size_t fit = 0;  // the longest prefix of the rest within the limit
        for (size_t e = 1; e <= rest.size(); ++e) {
          const bool inside_code_point =
              e < rest.size() && (static_cast<unsigned char>(rest[e]) & 0xC0) == 0x80;
          if (inside_code_point) continue;
          if (tokens(rest.substr(0, e)) <= limit) fit = e;
        }
        for (size_t k = 0; k + 1 < text_end; ++k) {
          if (std::string_view(",;:.-").find(parts[i][k]) == std::string_view::npos ||
              parts[i][k + 1] != ' ') {
            continue;
          }
          size_t cut = k + 1;
          while (cut < parts[i].size() && parts[i][cut] == ' ') ++cut;
          EXPECT_LE(cut, fit / 4) << "[" << parts[i] << "] fit " << fit;
        }
      }
      offset += parts[i].size();
    }
  }
}

}  // namespace
}  // namespace transerve::text
