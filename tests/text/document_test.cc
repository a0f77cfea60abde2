// A document's segments and its assembly (text/document.h): the composition of sentences,
// markup and protected spans, with a fake translator (tests/text/fake_translation.h).
#include "text/document.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "tests/text/fake_translation.h"

namespace transerve::text {
namespace {

using namespace testing;  // NOLINT: the fake translator and checkers

// Each segment's model text translated by `translate`, then restored as the server does.
template <typename Fn>
std::vector<AlignedTranslation> TranslateAll(const Document& doc, Fn translate) {
  std::vector<AlignedTranslation> out;
  for (size_t i = 0; i < doc.segment_count(); ++i) {
    out.push_back(doc.Restore(i, translate(doc.model_text(i))));
  }
  return out;
}

Document Build(const std::string& input, Format format = Format::kText) {
  DocumentOptions o;
  o.format = format;
  auto d = Document::Build(input, o, SegmentLimit{});
  EXPECT_TRUE(d.ok()) << d.status();
  return *std::move(d);
}

TEST(Document, TextRoundTripsByteForByteWithTheLayout) {
  const std::vector<std::string> inputs = {
      "",
      "   ",
      "One sentence.",
      "  Two sentences. The second one!  ",
      "Line one.\nLine two.\r\n\r\nAfter a blank line.\n",
      "- a bullet here.\n- another one.\n\t1. numbered and tabbed.\n",
      "Mail bugs@example.org about %s. Then edit /etc/x.conf.",
  };
  for (const std::string& input : inputs) {
    const Document doc = Build(input);
    const auto restored = TranslateAll(doc, [](const std::string& s) { return Identity(s); });
    EXPECT_EQ(doc.Assemble(restored), input);
    // The pieces a stream sends concatenate to the same text.
    std::string streamed;
    for (size_t i = 0; i < doc.segment_count(); ++i) streamed += doc.Prefix(i) + restored[i].target;
    streamed += doc.Suffix();
    EXPECT_EQ(streamed, input);
  }
}

TEST(Document, EachSentenceIsReplacedByItsTranslationAndTheLayoutStays) {
  const std::string input = "  Open the file.\n\n- Save it now!\r\n";
  const Document doc = Build(input);
  ASSERT_EQ(doc.segment_count(), 2u);
  EXPECT_EQ(doc.source_text(0), "Open the file.");
  EXPECT_EQ(doc.source_text(1), "Save it now!");
  const auto restored = TranslateAll(doc, [](const std::string& s) { return Uppercased(s); });
  EXPECT_EQ(doc.Assemble(restored), "  OPEN THE FILE.\n\n- SAVE IT NOW!\r\n");
}

TEST(Document, ProtectedSpansReachTheModelAsStandInsAndComeBack) {
  const Document doc = Build("Send %s to bugs@example.org now.");
  ASSERT_EQ(doc.segment_count(), 1u);
  EXPECT_TRUE(doc.needs_alignment(0));
  EXPECT_EQ(doc.model_text(0).find("bugs@example.org"), std::string::npos) << doc.model_text(0);
  EXPECT_NE(doc.model_text(0).find("%1"), std::string::npos) << doc.model_text(0);
  const auto restored = TranslateAll(doc, [](const std::string& s) { return Reversed(s); });
  const std::string out = doc.Assemble(restored);
  EXPECT_NE(out.find("bugs@example.org"), std::string::npos) << out;
  EXPECT_NE(out.find("%s"), std::string::npos) << out;
}

TEST(Document, ALongSentenceIsCutIntoPartsWithinTheLimit) {
  std::string input;
  for (int i = 0; i < 50; ++i) input += (i ? " " : "") + std::string("word") + std::to_string(i);
  DocumentOptions o;
  SegmentLimit limit{8, [](std::string_view s) { return static_cast<int>(Words(s).size()) + 1; }};
  auto doc = Document::Build(input, o, limit);
  ASSERT_TRUE(doc.ok());
  ASSERT_GE(doc->segment_count(), 7u);
  for (size_t i = 0; i < doc->segment_count(); ++i) {
    EXPECT_LE(limit.units(doc->model_text(i)), 8) << doc->model_text(i);
  }
  const auto restored = TranslateAll(*doc, [](const std::string& s) { return Identity(s); });
  EXPECT_EQ(doc->Assemble(restored), input);
}

TEST(Document, HtmlTagsAcrossSentencesGoBackOverTheWholeBlock) {
  const std::string input =
      "<p>First <b>one. Second</b> two.</p><ul><li>Item <i>a</i> here.</li></ul><pre>keep  "
      "me</pre>";
  const Document doc = Build(input, Format::kHtml);
  ASSERT_GE(doc.segment_count(), 3u);
  const auto identity = TranslateAll(doc, [](const std::string& s) { return Identity(s); });
  EXPECT_EQ(doc.Assemble(identity), input);
  const auto upper = TranslateAll(doc, [](const std::string& s) { return Uppercased(s); });
  const std::string out = doc.Assemble(upper);
  EXPECT_EQ(out,
            "<p>FIRST <b>ONE. SECOND</b> TWO.</p><ul><li>ITEM <i>A</i> HERE.</li></ul>"
            "<pre>keep  me</pre>");
  EXPECT_TRUE(NestsLikeStack(out));
}

TEST(Document, AHugeHtmlBlockWithTagsStaysLinearInItsTokens) {
  // 20,000 words in one paragraph with tags throughout: a dense alignment over the block would
  // be 20,000 x 20,000 floats (1.6 GB); the assembly must not build one.
  std::mt19937 rng(9);
  std::string input = "<p>";
  for (int i = 0; i < 20000; ++i) {
    input += (i % 97 == 0) ? "<b>W" + std::to_string(i) + "</b>" : "W" + std::to_string(i);
    input += (rng() % 13 == 0) ? ". " : " ";
  }
  input += "end.</p>";
  const Document doc = Build(input, Format::kHtml);
  ASSERT_GT(doc.segment_count(), 100u);
  const auto upper = TranslateAll(doc, [](const std::string& s) { return Uppercased(s); });
  const std::string out = doc.Assemble(upper);
  EXPECT_EQ(std::count(out.begin(), out.end(), '<'), std::count(input.begin(), input.end(), '<'));
  EXPECT_TRUE(NestsLikeStack(out));
}

TEST(Document, RandomDocumentsRoundTripAndConcatenate) {
  std::mt19937 rng(4);
  const char* kParts[] = {"Open the file.", "Save it!",    "Is it done?", " ",  "  ",  "\n",
                          "\r\n",           "\n\n",        "\t",          "- ", "1. ", "%s",
                          "a@b.org",        "/etc/x.conf", "word"};
  for (int round = 0; round < 300; ++round) {
    std::string input;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) input += kParts[rng() % std::size(kParts)];
    const Document doc = Build(input);
    const auto restored = TranslateAll(doc, [](const std::string& s) { return Identity(s); });
    ASSERT_EQ(doc.Assemble(restored), input) << round;
    std::string streamed;
    for (size_t i = 0; i < doc.segment_count(); ++i) streamed += doc.Prefix(i) + restored[i].target;
    ASSERT_EQ(streamed + doc.Suffix(), input) << round;
  }
}

}  // namespace
}  // namespace transerve::text
