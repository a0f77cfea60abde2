// SubRip and WebVTT files: random files written back byte for byte when their texts come back
// unchanged; translated texts land in their cues with everything else as it was; markup lifted
// and written again; bad files refused with the reason.
#include "files/subtitle_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "files/subtitle_markup.h"

namespace transerve::files {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<std::string> kWords = {"the", "night", "is",  "young", "Anna",  "said",
                                         "we",  "never", "go",  "back",  "Größe", "über",
                                         "7",   "?",     "...", "l'été", "日本",  "x&y"};

std::string Timestamp(std::mt19937& rng, bool subrip) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), subrip ? "%02u:%02u:%02u,%03u" : "%02u:%02u:%02u.%03u",
                static_cast<unsigned>(rng() % 3), static_cast<unsigned>(rng() % 60),
                static_cast<unsigned>(rng() % 60), static_cast<unsigned>(rng() % 1000));
  return buf;
}

std::string RandomLine(std::mt19937& rng, bool subrip, bool dialogue) {
  std::vector<std::string> words;
  const int n = 1 + static_cast<int>(rng() % 6);
  for (int i = 0; i < n; ++i) {
    std::string w = kWords[rng() % kWords.size()];
    if (!subrip) absl::StrReplaceAll({{"&", "&amp;"}}, &w);
    words.push_back(w);
  }
  std::string line = absl::StrJoin(words, " ");
  switch (rng() % 5) {
    case 0:
      line = subrip ? "<i>" + line + "</i>" : "<i>" + line + "</i>";
      break;
    case 1:
      line = subrip ? "<font color=\"#ffff00\">" + line + "</font>" : "<v Anna>" + line;
      break;
    case 2:
      line = subrip ? "{\\an8}" + line : "<c.yellow>" + line + "</c>";
      break;
    default:
      break;
  }
  return dialogue ? "- " + line : line;
}

// A random file of the format, with what real files carry: a byte-order mark or not, CRLF or
// LF, numbers or identifiers, cue settings, extra blank lines, no final line end.
std::string RandomFile(std::mt19937& rng, bool subrip, int* cues_out) {
  const std::string nl = rng() % 2 ? "\r\n" : "\n";
  std::string f = rng() % 4 == 0 ? "\xEF\xBB\xBF" : "";
  if (!subrip) {
    f += "WEBVTT" + std::string(rng() % 2 ? " - a film" : "") + nl + "Kind: captions" + nl + nl;
    f += "STYLE" + nl + "::cue { color: yellow }" + nl + nl;
  }
  const int cues = 1 + static_cast<int>(rng() % 8);
  for (int c = 0; c < cues; ++c) {
    if (!subrip && rng() % 4 == 0) f += "NOTE a translator's note" + nl + "on two lines" + nl + nl;
    if (subrip || rng() % 2)
      f += (subrip ? std::to_string(c + 1) : "cue-" + std::to_string(c)) + nl;
    f += Timestamp(rng, subrip) + " --> " + Timestamp(rng, subrip);
    if (!subrip && rng() % 2) f += " line:0 position:20% align:start";
    f += nl;
    const bool dialogue = rng() % 4 == 0;
    const int lines = (dialogue ? 2 : 1) + static_cast<int>(rng() % 2);
    for (int l = 0; l < lines; ++l) f += RandomLine(rng, subrip, dialogue) + nl;
    if (c + 1 < cues) f += nl + (rng() % 5 == 0 ? nl : "");
  }
  if (rng() % 3 == 0) f.resize(f.size() - nl.size());  // no line end at the end
  *cues_out = cues;
  return f;
}

std::vector<std::string> Sources(const SubtitleFile& file, bool subrip) {
  std::vector<std::string> out;
  for (const text::MarkedText& unit : file.units())
    out.push_back(WriteSubtitleMarkup(unit, subrip));
  return out;
}

// The lines a translation must not touch: timings and the blank lines between cues.
std::vector<std::string> TimingAndBlankLines(const std::string& file) {
  std::vector<std::string> out;
  for (absl::string_view l : absl::StrSplit(file, '\n')) {
    if (l.find("-->") != absl::string_view::npos || l.empty() || l == "\r") out.emplace_back(l);
  }
  return out;
}

class SubtitleFormats : public ::testing::TestWithParam<SubtitleFormat> {};

TEST_P(SubtitleFormats, RandomFilesComeBackByteForByteWhenNothingChanges) {
  const bool subrip = GetParam() == SubtitleFormat::kSubRip;
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 300; ++i) {
    int cues = 0;
    const std::string f = RandomFile(rng, subrip, &cues);
    auto parsed = SubtitleFile::Parse(f, GetParam());
    ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << f;
    EXPECT_EQ(parsed->cue_count(), static_cast<size_t>(cues)) << f;
    EXPECT_EQ(parsed->Render(Sources(*parsed, subrip)), f);
  }
}

TEST_P(SubtitleFormats, TranslationsLandInTheirCuesWithTheRestAsItWas) {
  const bool subrip = GetParam() == SubtitleFormat::kSubRip;
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 200; ++i) {
    int cues = 0;
    const std::string f = RandomFile(rng, subrip, &cues);
    auto parsed = SubtitleFile::Parse(f, GetParam());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    // A "translation": each unit with words added, markup kept.
    std::vector<std::string> translated;
    for (const std::string& s : Sources(*parsed, subrip)) translated.push_back(s + " and more");
    const std::string out = parsed->Render(translated);
    auto again = SubtitleFile::Parse(out, GetParam());
    ASSERT_TRUE(again.ok()) << again.status() << "\n" << out;
    ASSERT_EQ(again->cue_count(), parsed->cue_count()) << f << "\n---\n" << out;
    // Every line that is not cue text is unchanged, in order.
    EXPECT_EQ(TimingAndBlankLines(out), TimingAndBlankLines(f));
    // The texts read back are the translations (a re-broken line joins with a space again).
    std::vector<std::string> read_back = Sources(*again, subrip);
    ASSERT_EQ(read_back.size(), translated.size());
    for (size_t u = 0; u < translated.size(); ++u) EXPECT_EQ(read_back[u], translated[u]);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, SubtitleFormats,
                         ::testing::Values(SubtitleFormat::kSubRip, SubtitleFormat::kWebVtt),
                         [](const auto& info) {
                           return info.param == SubtitleFormat::kSubRip ? "srt" : "vtt";
                         });

TEST(SubtitleFile, ACueOverTwoLinesIsOneTextAndComesBackOnTwoLines) {
  const std::string f = "1\n00:00:01,000 --> 00:00:02,500\nWe never go back to\nthe old house.\n";
  auto parsed = SubtitleFile::Parse(f, SubtitleFormat::kSubRip);
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->units().size(), 1u);
  EXPECT_EQ(parsed->units()[0].text, "We never go back to the old house.");
  EXPECT_EQ(parsed->Render({"Wir gehen nie wieder in das alte Haus zurück."}),
            "1\n00:00:01,000 --> 00:00:02,500\nWir gehen nie wieder in\ndas alte Haus zurück.\n");
}

TEST(SubtitleFile, DialogueLinesAreTextsOfTheirOwn) {
  const std::string f = "1\r\n00:00:01,000 --> 00:00:02,000\r\n- Hello.\r\n- Hi, Anna!\r\n";
  auto parsed = SubtitleFile::Parse(f, SubtitleFormat::kSubRip);
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->units().size(), 2u);
  EXPECT_EQ(parsed->units()[0].text, "- Hello.");
  EXPECT_EQ(parsed->Render({"- Hallo.", "- Hallo, Anna!"}),
            "1\r\n00:00:01,000 --> 00:00:02,000\r\n- Hallo.\r\n- Hallo, Anna!\r\n");
}

TEST(SubtitleFile, SubRipWithoutTheBlankLineBetweenCuesIsStillTwoCues) {
  const std::string f =
      "1\n00:00:01,000 --> 00:00:02,000\nFirst.\n2\n00:00:03,000 --> 00:00:04,000\nSecond.\n";
  auto parsed = SubtitleFile::Parse(f, SubtitleFormat::kSubRip);
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->cue_count(), 2u);
  EXPECT_EQ(parsed->units()[1].text, "Second.");
  EXPECT_EQ(parsed->Render({"Erstens.", "Zweitens."}),
            "1\n00:00:01,000 --> 00:00:02,000\nErstens.\n2\n00:00:03,000 --> 00:00:04,000\n"
            "Zweitens.\n");
}

TEST(SubtitleFile, MarkupIsLiftedOutAndReferencesDecoded) {
  text::MarkedText srt = LiftSubtitleTags("{\\an8}<i>Tom & <b>Jerry</b></i> <3", true);
  EXPECT_EQ(srt.text, "Tom & Jerry <3");
  ASSERT_EQ(srt.tags.size(), 3u);
  EXPECT_EQ(srt.tags[0].open, "{\\an8}");
  EXPECT_TRUE(srt.tags[0].is_void());
  EXPECT_EQ(srt.tags[1].open, "<i>");
  EXPECT_EQ(srt.tags[1].close, "</i>");
  EXPECT_EQ(srt.tags[1].range.begin, 0u);
  EXPECT_EQ(srt.tags[1].range.end, 11u);
  EXPECT_EQ(srt.tags[2].parent, 1);
  EXPECT_EQ(WriteSubtitleMarkup(srt, true), "{\\an8}<i>Tom & <b>Jerry</b></i> <3");

  text::MarkedText vtt = LiftSubtitleTags("<v Anna>Tom &amp; <c.loud>Jerry</c> &lt;3", false);
  EXPECT_EQ(vtt.text, "Tom & Jerry <3");
  ASSERT_EQ(vtt.tags.size(), 2u);
  EXPECT_TRUE(vtt.tags[0].is_void());  // <v> without </v>: kept where it was
  EXPECT_EQ(vtt.tags[1].parent, -1);   // moved out of the unclosed <v>
  EXPECT_EQ(WriteSubtitleMarkup(vtt, false), "<v Anna>Tom &amp; <c.loud>Jerry</c> &lt;3");
}

TEST(SubtitleFile, BadFilesAreRefusedWithTheReason) {
  auto no_header = SubtitleFile::Parse("00:01.000 --> 00:02.000\nHi\n", SubtitleFormat::kWebVtt);
  EXPECT_EQ(no_header.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_header.status().message()), HasSubstr("WEBVTT"));
  auto not_srt = SubtitleFile::Parse("Dear Anna,\n\nthis is a letter.\n", SubtitleFormat::kSubRip);
  EXPECT_THAT(std::string(not_srt.status().message()), HasSubstr("no cue timing line"));
  auto bad_utf8 =
      SubtitleFile::Parse("1\n00:00:01,000 --> 00:00:02,000\n\xC3(\n", SubtitleFormat::kSubRip);
  EXPECT_THAT(std::string(bad_utf8.status().message()), HasSubstr("invalid UTF-8 at byte 32"));
  // An empty file, or one of blank lines only, has no cues and nothing wrong.
  for (const char* empty : {"", "\n\n", "\xEF\xBB\xBF \r\n"}) {
    auto parsed = SubtitleFile::Parse(empty, SubtitleFormat::kSubRip);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->cue_count(), 0u);
    EXPECT_EQ(parsed->Render({}), empty);
  }
}

TEST(BreakIntoLines, LinesOfAboutEqualLengthAtSpacesOutsideTags) {
  EXPECT_THAT(BreakIntoLines("aaaa bb cc dddd", 2, true), ElementsAre("aaaa bb", "cc dddd"));
  EXPECT_THAT(BreakIntoLines("<font color=\"a b\">one two</font>", 2, true),
              ElementsAre("<font color=\"a b\">one", "two</font>"));
  // WebVTT's tags are the format's own: a voice's name with a space is one tag.
  EXPECT_THAT(BreakIntoLines("<v Anna Smith>one two three four", 2, false),
              ElementsAre("<v Anna Smith>one two", "three four"));
  EXPECT_THAT(BreakIntoLines("one", 3, true), ElementsAre("one"));
  EXPECT_THAT(BreakIntoLines("a b c", 3, true), ElementsAre("a", "b", "c"));
}

// Lifting the tags out and writing them back gives the line again, for every line the random
// files are made of (well-formed markup, WebVTT's text escaped).
TEST_P(SubtitleFormats, MarkupLiftedAndWrittenBackIsTheLine) {
  const bool subrip = GetParam() == SubtitleFormat::kSubRip;
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 1000; ++i) {
    const std::string line = RandomLine(rng, subrip, rng() % 4 == 0);
    const text::MarkedText m = LiftSubtitleTags(line, subrip);
    EXPECT_EQ(WriteSubtitleMarkup(m, subrip), line);
    EXPECT_EQ(m.text.find('<'), std::string::npos) << line;  // no tag left in the text
  }
}

}  // namespace
}  // namespace transerve::files
