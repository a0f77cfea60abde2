#include "text/marked_text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/text/fake_translation.h"

namespace transerve::text {
namespace {

using testing::Identity;
using testing::NestsLikeStack;
using testing::Reordered;
using testing::Reversed;
using testing::TagMultiset;
using testing::Uppercased;

// Reads simple markup ("<b>red</b> house<br/>", no attributes, no '<' in text) into the text and
// its tags.
MarkedText Mark(const std::string& markup) {
  MarkedText m;
  std::vector<int> open;
  size_t i = 0;
  while (i < markup.size()) {
    if (markup[i] != '<') {
      m.text += markup[i++];
      continue;
    }
    const size_t end = markup.find('>', i) + 1;
    const std::string tag = markup.substr(i, end - i);
    i = end;
    if (tag[1] == '/') {
      m.tags[open.back()].close = tag;
      m.tags[open.back()].range.end = m.text.size();
      open.pop_back();
      continue;
    }
    InlineTag t;
    t.open = tag;
    t.range = {m.text.size(), m.text.size()};
    t.parent = open.empty() ? -1 : open.back();
    m.tags.push_back(t);
    if (tag[tag.size() - 2] != '/') open.push_back(static_cast<int>(m.tags.size()) - 1);
  }
  return m;
}

std::string Plain(std::string_view s) { return std::string(s); }

std::string Insert(const std::string& markup, const AlignedTranslation& t) {
  return InsertTags(Mark(markup), t, Plain);
}

std::string Insert(const std::string& markup,
                   AlignedTranslation (*translate)(const std::string&, uint32_t)) {
  return Insert(markup, translate(Mark(markup).text, 3));
}

// The output without its tags.
std::string StripTags(const std::string& s) {
  std::string out;
  bool in_tag = false;
  for (char c : s) {
    if (c == '<') in_tag = true;
    if (!in_tag) out += c;
    if (c == '>') in_tag = false;
  }
  return out;
}

TEST(InsertTags, IdentityGivesTheSourceBack) {
  for (const std::string markup : {
           "<b>red</b> house",
           "the <b>red</b> house",
           "<i>all of it</i>",
           "<a><b>nested</b> words</a> here",
           "a <br/> b",
           "a<br/> b",
           "a <br/>b",
           "<br/>start and end<br/>",
           "<b> spaced </b> out",
           "one <b></b>two",
           "x <s>y <u>z w</u></s> v.",
           "caf\xC3\xA9 <em>cr\xC3\xA8me</em> br\xC3\xBBl\xC3\xA9"
           "e",
           "H<sub>2</sub>O is water",
       }) {
    EXPECT_EQ(Insert(markup, Identity), markup);
  }
}

TEST(InsertTags, TagFollowsItsWordWhenTheOrderChanges) {
  EXPECT_EQ(Insert("<b>red</b> house", Reversed), "HOUSE <b>RED</b>");
  EXPECT_EQ(Insert("the <b>red</b> house", Reversed), "HOUSE <b>RED</b> THE");
  EXPECT_EQ(Insert("<a>one</a> and <i>two</i>", Reversed), "<i>TWO</i> AND <a>ONE</a>");
}

TEST(InsertTags, TagAroundSeveralWordsStaysAroundThem) {
  EXPECT_EQ(Insert("see <b>the big</b> dog", Uppercased), "SEE <b>THE BIG</b> DOG");
  // Reversed, "the big" becomes "BIG THE": still one run.
  EXPECT_EQ(Insert("see <b>the big</b> dog", Reversed), "DOG <b>BIG THE</b> SEE");
}

TEST(InsertTags, NestedTagsStayNested) {
  EXPECT_EQ(Insert("<a>x <b>y</b> z</a> w", Uppercased), "<a>X <b>Y</b> Z</a> W");
  EXPECT_EQ(Insert("<a>x <b>y</b> z</a> w", Reversed), "W <a>Z <b>Y</b> X</a>");
}

TEST(InsertTags, ChildTheAlignmentSendsOutsideItsParentStaysInside) {
  // "b" wraps "y", inside "a" (x y); the alignment moves y to the far end, past w.
  const MarkedText m = Mark("<a>x <b>y</b></a> w");
  const AlignedTranslation t = Reordered(m.text, {0, 2, 1});  // X W Y
  const std::string out = InsertTags(m, t, Plain);
  EXPECT_TRUE(NestsLikeStack(out)) << out;
  EXPECT_EQ(StripTags(out), "X W Y");
  const size_t a_open = out.find("<a>"), a_close = out.find("</a>");
  const size_t b_open = out.find("<b>"), b_close = out.find("</b>");
  EXPECT_LT(a_open, b_open);
  EXPECT_LT(b_close, a_close);
}

TEST(InsertTags, CrossingSiblingsAreTrimmedNotOverlapped) {
  // b wraps "a c", i wraps "b"; the target interleaves them: A B C with b->A,C and i->B.
  const MarkedText m = Mark("<b>a c</b> <i>b</i>");
  const AlignedTranslation t = Reordered(m.text, {0, 2, 1});  // A B C
  const std::string out = InsertTags(m, t, Plain);
  EXPECT_TRUE(NestsLikeStack(out)) << out;
  EXPECT_EQ(out, "<b>A</b> <i>B</i> C");
}

TEST(InsertTags, TwoTagsOnOneWordBothStayAndDoNotOverlap) {
  // Two source words merged into one target token.
  MarkedText m = Mark("<b>very</b> <i>good</i>");
  AlignedTranslation t;
  t.source = m.text;
  t.target = "EXCELLENT";
  t.source_tokens = PieceRanges(t.source, {"\xE2\x96\x81very", "\xE2\x96\x81good", "</s>"});
  t.target_tokens = PieceRanges(t.target, {"\xE2\x96\x81"
                                           "EXCELLENT",
                                           "</s>"});
  t.weights = {0.6f, 0.3f, 0.1f, 0.1f, 0.1f, 0.8f};
  const std::string out = InsertTags(m, t, Plain);
  EXPECT_TRUE(NestsLikeStack(out)) << out;
  EXPECT_EQ(out, "<b>EXCELLENT</b><i></i>");
}

TEST(InsertTags, VoidElementLandsBetweenTheWordsAroundIt) {
  EXPECT_EQ(Insert("line one<br/> line two", Uppercased), "LINE ONE<br/> LINE TWO");
  EXPECT_EQ(Insert("first <br/>second", Uppercased), "FIRST <br/>SECOND");
  // Reversed: after the target of "first" (the word before it).
  EXPECT_EQ(Insert("first<br/> second", Reversed), "SECOND FIRST<br/>");
}

TEST(InsertTags, TagsAtTheEdgesMapToTheEdges) {
  EXPECT_EQ(Insert("<b>the whole text</b>", Reversed), "<b>TEXT WHOLE THE</b>");
  EXPECT_EQ(Insert("<br/>a b c", Reversed), "<br/>C B A");
  EXPECT_EQ(Insert("a b c<br/>", Reversed), "C B A<br/>");
  EXPECT_EQ(Insert("<p/>a b<q/>", Reversed), "<p/>B A<q/>");
}

TEST(InsertTags, WithoutAlignmentTagsGoToTheSameRelativePlace) {
  const MarkedText m = Mark("one <b>two</b> three four");
  AlignedTranslation t = Uppercased(m.text);
  t.weights.clear();
  EXPECT_EQ(InsertTags(m, t, Plain), "ONE <b>TWO</b> THREE FOUR");
  // A different length: still at word boundaries, nested, once.
  t.target = "UN DEUX TROIS QUATRE CINQ SIX";
  t.target_tokens = PieceRanges(t.target, testing::Pieces(testing::Words(t.target)));
  const std::string out = InsertTags(m, t, Plain);
  EXPECT_EQ(StripTags(out), t.target);
  EXPECT_TRUE(NestsLikeStack(out)) << out;
  EXPECT_NE(out.find("<b>"), std::string::npos);
  for (const std::string w : {"<b>U", "<b>D", "<b>T", "<b>Q", "<b>C", "<b>S"}) {
    if (out.find(w) != std::string::npos) return;  // the tag starts at a word
  }
  ADD_FAILURE() << out;
}

TEST(InsertTags, UnchangedWordKeepsItsInnerMarkup) {
  EXPECT_EQ(Insert("H<sub>2</sub>O is water", Reversed), "WATER IS H<sub>2</sub>O");
  // A word that changed: the tag widens to the whole word (never splits it).
  EXPECT_EQ(Insert("un<b>believ</b>able story", Reversed), "STORY <b>UNBELIEVABLE</b>");
}

TEST(InsertTags, NothingAlignedGivesAnEmptyTagAtTheMappedPoint) {
  const MarkedText m = Mark("a <b>b</b> c");
  AlignedTranslation t = Uppercased(m.text);
  // "B" is gone from the target and nothing attends to source word "b".
  t.target = "A C";
  t.target_tokens = PieceRanges(t.target, {"\xE2\x96\x81"
                                           "A",
                                           "\xE2\x96\x81"
                                           "C",
                                           "</s>"});
  t.weights = {0.8f, 0.0f, 0.1f, 0.1f, 0.1f, 0.0f, 0.8f, 0.1f, 0.0f, 0.0f, 0.1f, 0.9f};
  const std::string out = InsertTags(m, t, Plain);
  EXPECT_TRUE(NestsLikeStack(out)) << out;
  EXPECT_EQ(StripTags(out), "A C");
  EXPECT_NE(out.find("<b></b>"), std::string::npos) << out;
}

TEST(InsertTags, TextRunsGoThroughEscape) {
  const MarkedText m = Mark("fish & <b>chips</b>");
  const std::string out = InsertTags(m, Uppercased(m.text), [](std::string_view s) {
    std::string e;
    for (char c : s) e += c == '&' ? std::string("&amp;") : std::string(1, c);
    return e;
  });
  EXPECT_EQ(out, "FISH &amp; <b>CHIPS</b>");
}

TEST(InsertTags, NonAsciiWordsAreNeverSplit) {
  const std::string out = Insert(
      "\xC3\xBC"
      "ber <b>gr\xC3\xB6\xC3\x9F"
      "e</b> stra\xC3\x9F"
      "e",
      Reversed);
  EXPECT_EQ(out,
            "STRA\xC3\x9F"
            "E <b>GR\xC3\xB6\xC3\x9F"
            "E</b> \xC3\xBC"
            "BER");
}

TEST(InsertTags, BadTagRangesAndParentsStillGiveEveryTagOnce) {
  MarkedText m;
  m.text = "one two three";
  m.tags = {{{4, 99}, "<a>", "</a>", -1}, {{0, 3}, "<b>", "</b>", 5}, {{2, 1}, "<c>", "</c>", 0}};
  const std::string out = InsertTags(m, Reversed(m.text), Plain);
  EXPECT_TRUE(NestsLikeStack(out)) << out;
  EXPECT_EQ(StripTags(out), "THREE TWO ONE");
  for (const std::string t : {"<a>", "</a>", "<b>", "</b>", "<c>", "</c>"}) {
    EXPECT_EQ(out.find(t), out.rfind(t)) << out;
    EXPECT_NE(out.find(t), std::string::npos) << out;
  }
}

// Random trees of tags over random words, translated with a random permutation of the words:
// every tag comes out exactly once, nested like a stack, with the target's text untouched.
TEST(InsertTags, RandomTreesAndPermutationsAlwaysNestAndKeepEveryTag) {
  std::mt19937 rng(99);
  const std::vector<std::string> vocabulary = {
      "alpha", "beta", "gamma", "d\xC3\xA9lta", "e", "\xCE\xB6\xCE\xB7", "theta,", "iota."};
  for (int round = 0; round < 2000; ++round) {
    std::string markup;
    int next_tag = 0;
    std::vector<std::string> open;
    const int words = 1 + static_cast<int>(rng() % 12);
    for (int w = 0; w < words; ++w) {
      // Open, close or void tags at random between words.
      for (int k = static_cast<int>(rng() % 3); k > 0; --k) {
        const int what = static_cast<int>(rng() % 4);
        if (what == 0 && !open.empty()) {
          markup += "</" + open.back() + ">";
          open.pop_back();
        } else if (what == 1) {
          markup += "<v" + std::to_string(next_tag++) + "/>";
        } else if (open.size() < 6) {
          open.push_back("t" + std::to_string(next_tag++));
          markup += "<" + open.back() + ">";
        }
      }
      markup += vocabulary[rng() % vocabulary.size()];
      if (w + 1 < words) markup += rng() % 4 == 0 ? "  " : " ";
    }
    while (!open.empty()) {
      markup += "</" + open.back() + ">";
      open.pop_back();
    }
    const MarkedText m = Mark(markup);
    std::vector<size_t> order(testing::Words(m.text).size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    const AlignedTranslation t = Reordered(m.text, order, rng());
    const std::string out = InsertTags(m, t, Plain);
    ASSERT_TRUE(NestsLikeStack(out)) << markup << " -> " << out;
    ASSERT_EQ(TagMultiset(out), TagMultiset(markup)) << markup << " -> " << out;
    ASSERT_EQ(StripTags(out), t.target) << markup << " -> " << out;
    // And with no alignment at all.
    AlignedTranslation plain = t;
    plain.weights.clear();
    const std::string out2 = InsertTags(m, plain, Plain);
    ASSERT_TRUE(NestsLikeStack(out2)) << markup << " -> " << out2;
    ASSERT_EQ(TagMultiset(out2), TagMultiset(markup)) << markup << " -> " << out2;
    // The identity gives the source back.
    ASSERT_EQ(InsertTags(m, Identity(m.text, rng()), Plain), markup);
  }
}

}  // namespace
}  // namespace transerve::text
