#include "text/aligned_translation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace transerve::text {
namespace {

std::string Slice(const std::string& s, ByteRange r) { return s.substr(r.begin, r.end - r.begin); }

// A translation whose target token t attends to source token `to[t]` (weight 0.7, the rest
// spread over the others at random).
AlignedTranslation Aligned(const std::string& source, const std::vector<std::string>& src_pieces,
                           const std::string& target, const std::vector<std::string>& tgt_pieces,
                           const std::vector<int>& to, uint32_t seed = 7) {
  AlignedTranslation t;
  t.source = source;
  t.target = target;
  t.source_tokens = PieceRanges(source, src_pieces);
  t.target_tokens = PieceRanges(target, tgt_pieces);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 0.25f / static_cast<float>(src_pieces.size()));
  for (size_t i = 0; i < tgt_pieces.size(); ++i) {
    for (size_t s = 0; s < src_pieces.size(); ++s) {
      t.weights.push_back(static_cast<int>(s) == to[i] ? 0.7f : u(rng));
    }
  }
  return t;
}

TEST(PieceRanges, MatchesWordsAndSkipsWhitespace) {
  const std::string text = "  Hello,\tworld.";
  const auto r = PieceRanges(text, {"▁Hel", "lo", ",", "▁world", ".", "</s>"});
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(Slice(text, r[0]), "Hel");
  EXPECT_EQ(Slice(text, r[1]), "lo");
  EXPECT_EQ(Slice(text, r[2]), ",");
  EXPECT_EQ(Slice(text, r[3]), "world");
  EXPECT_EQ(Slice(text, r[4]), ".");
  EXPECT_TRUE(r[5].empty());
  EXPECT_EQ(r[5].begin, text.size());
}

TEST(PieceRanges, UnmatchedPieceCoversTheGapToTheNextMatch) {
  // NFKC turned the ellipsis into three dots; <unk> stands for a character the vocabulary lacks.
  const std::string text = "Wait\xE2\x80\xA6 \xE2\x98\x83 ok";
  const auto r = PieceRanges(text, {"▁Wait", "...", "▁", "<unk>", "▁ok"});
  EXPECT_EQ(Slice(text, r[0]), "Wait");
  EXPECT_EQ(Slice(text, r[1]), "\xE2\x80\xA6");
  EXPECT_EQ(Slice(text, r[3]), "\xE2\x98\x83");
  EXPECT_EQ(Slice(text, r[4]), "ok");
}

TEST(MapSourceRange, FollowsTheAlignmentAndKeepsWordsWhole) {
  // "the red house" -> "das rote Haus": "red" aligns to "ro"+"te".
  const auto t = Aligned("the red house", {"▁the", "▁red", "▁house", "</s>"}, "das rote Haus",
                         {"▁das", "▁ro", "te", "▁Haus", "</s>"}, {0, 1, 1, 2, 3});
  EXPECT_EQ(Slice(t.target, MapSourceRange(t, {4, 7})), "rote");
  EXPECT_EQ(Slice(t.target, MapSourceRange(t, {4, 13})), "rote Haus");
  // Only "ro" aligned to "red": the range still widens to the whole word.
  const auto u = Aligned("the red house", {"▁the", "▁red", "▁house", "</s>"}, "das rote Haus",
                         {"▁das", "▁ro", "te", "▁Haus", "</s>"}, {0, 1, 2, 2, 3});
  EXPECT_EQ(Slice(u.target, MapSourceRange(u, {4, 7})), "rote");
}

TEST(MapSourceRange, ReorderedWordsMapToTheirNewPlace) {
  const auto t = Aligned("open the file", {"▁open", "▁the", "▁file", "</s>"}, "die Datei öffnen",
                         {"▁die", "▁Datei", "▁öffnen", "</s>"}, {1, 2, 0, 3});
  EXPECT_EQ(Slice(t.target, MapSourceRange(t, {0, 4})), "öffnen");
  EXPECT_EQ(Slice(t.target, MapSourceRange(t, {9, 13})), "Datei");
}

TEST(MapSourcePoint, LandsOnAWordBoundaryAfterTheAlignedWord) {
  const auto t = Aligned("save to disk", {"▁save", "▁to", "▁disk", "</s>"}, "auf Platte speichern",
                         {"▁auf", "▁Pla", "tte", "▁speichern", "</s>"}, {1, 2, 2, 0, 3});
  EXPECT_EQ(MapSourcePoint(t, 4), std::string("auf Platte speichern").size());  // after "save"
  EXPECT_EQ(MapSourcePoint(t, 12), std::string("auf Platte").size());           // after "disk"
  // Nothing before: before the word "save" aligns to.
  EXPECT_EQ(MapSourcePoint(t, 0), std::string("auf Platte ").size());
}

TEST(MapSourcePoint, WithoutAlignmentUsesTheEdgesOrTheRelativePosition) {
  AlignedTranslation t;
  t.source = "one two three four";
  t.target = "eins zwei drei vier";
  t.source_tokens = PieceRanges(t.source, {"▁one", "▁two", "▁three", "▁four"});
  t.target_tokens = PieceRanges(t.target, {"▁eins", "▁zwei", "▁drei", "▁vier"});
  EXPECT_EQ(MapSourcePoint(t, 0), 0u);
  EXPECT_EQ(MapSourcePoint(t, t.source.size()), t.target.size());
  const size_t mid = MapSourcePoint(t, 8);
  EXPECT_TRUE(mid == 9 || mid == 10) << mid;  // a boundary around "zwei"
}

TEST(HardAlignment, AGivenHardAlignmentStandsForTheWeights) {
  auto t = Aligned("open the file", {"▁open", "▁the", "▁file", "</s>"}, "die Datei öffnen",
                   {"▁die", "▁Datei", "▁öffnen", "</s>"}, {1, 2, 0, 3});
  const std::vector<int> from_weights = HardAlignment(t);
  AlignedTranslation hard_only = t;
  hard_only.weights.clear();
  hard_only.hard = from_weights;
  EXPECT_TRUE(hard_only.has_alignment());
  EXPECT_EQ(HardAlignment(hard_only), from_weights);
  EXPECT_EQ(MapSourceRange(hard_only, {0, 4}), MapSourceRange(t, {0, 4}));
  // Out-of-range or textless entries are no alignment.
  hard_only.hard = {7, -3, 0, 1};
  EXPECT_EQ(HardAlignment(hard_only), (std::vector<int>{-1, -1, 0, -1}));
}

TEST(ChainTranslations, MapsThroughThePivotText) {
  // "le chat rouge" -> "the red cat" -> "die rote Katze": the pivot's pieces differ between legs
  // ("red" is one piece leaving the first leg and two entering the second).
  const auto first = Aligned("le chat rouge", {"▁le", "▁chat", "▁rouge", "</s>"}, "the red cat",
                             {"▁the", "▁red", "▁cat", "</s>"}, {0, 2, 1, 3});
  const auto second = Aligned("the red cat", {"▁the", "▁r", "ed", "▁cat", "</s>"}, "die rote Katze",
                              {"▁die", "▁rote", "▁Katze", "</s>"}, {0, 1, 3, 4});
  const AlignedTranslation both = ChainTranslations(first, second);
  EXPECT_EQ(both.source, "le chat rouge");
  EXPECT_EQ(both.target, "die rote Katze");
  ASSERT_TRUE(both.has_alignment());
  EXPECT_EQ(HardAlignment(both), (std::vector<int>{0, 2, 1, -1}));
  // "rouge" (bytes 8..13) became "rote", "chat" became "Katze".
  EXPECT_EQ(Slice(both.target, MapSourceRange(both, {8, 13})), "rote");
  EXPECT_EQ(Slice(both.target, MapSourceRange(both, {3, 7})), "Katze");
}

TEST(ChainTranslations, ComposesRandomWordOrders) {
  std::mt19937 rng(20261207);
  for (int round = 0; round < 50; ++round) {
    const int n = std::uniform_int_distribution<int>(1, 12)(rng);
    std::vector<std::string> words_a, words_b, words_c;
    for (int i = 0; i < n; ++i) {
      words_a.push_back("a" + std::to_string(i));
      words_b.push_back("bb" + std::to_string(i));
      words_c.push_back("c" + std::to_string(i));
    }
    // Target word i of each leg comes from source word order[i].
    std::vector<int> order1(n), order2(n);
    std::iota(order1.begin(), order1.end(), 0);
    std::iota(order2.begin(), order2.end(), 0);
    std::shuffle(order1.begin(), order1.end(), rng);
    std::shuffle(order2.begin(), order2.end(), rng);
    auto join = [](const std::vector<std::string>& w, const std::vector<int>& order) {
      std::string s;
      for (int i : order) s += (s.empty() ? "" : " ") + w[i];
      return s;
    };
    auto pieces = [](const std::string& text) {
      std::vector<std::string> p;
      std::istringstream in(text);
      for (std::string w; in >> w;) p.push_back("▁" + w);
      p.push_back("</s>");
      return p;
    };
    std::vector<int> identity(n);
    std::iota(identity.begin(), identity.end(), 0);
    const std::string a = join(words_a, identity);
    const std::string b = join(words_b, order1);  // b's word i is a's word order1[i]
    const std::string c = join(words_c, order2);  // c's word i is b's word order2[i]
    std::vector<int> to1(order1), to2(order2);
    to1.push_back(n);  // EOS to EOS
    to2.push_back(n);
    const auto first = Aligned(a, pieces(a), b, pieces(b), to1, rng());
    const auto second = Aligned(b, pieces(b), c, pieces(c), to2, rng());
    const auto both = ChainTranslations(first, second);
    ASSERT_TRUE(both.has_alignment());
    std::vector<int> expected;
    for (int i = 0; i < n; ++i) expected.push_back(order1[order2[i]]);
    expected.push_back(-1);  // EOS has no text
    EXPECT_EQ(HardAlignment(both), expected) << "round " << round;
  }
}

TEST(ChainTranslations, LegsThatDoNotMeetGiveNoAlignment) {
  const auto first = Aligned("a b", {"▁a", "▁b", "</s>"}, "x y", {"▁x", "▁y", "</s>"}, {0, 1, 2});
  const auto second = Aligned("x z", {"▁x", "▁z", "</s>"}, "p q", {"▁p", "▁q", "</s>"}, {0, 1, 2});
  const auto both = ChainTranslations(first, second);
  EXPECT_EQ(both.target, "p q");
  EXPECT_FALSE(both.has_alignment());
  AlignedTranslation unaligned = first;
  unaligned.weights.clear();
  EXPECT_FALSE(ChainTranslations(unaligned, Aligned("x y", {"▁x", "▁y", "</s>"}, "p q",
                                                    {"▁p", "▁q", "</s>"}, {0, 1, 2}))
                   .has_alignment());
}

}  // namespace
}  // namespace transerve::text
