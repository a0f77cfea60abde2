// A subtitle file, SubRip (.srt) or WebVTT (.vtt), cut into what a translator changes - the
// text of each cue - and what it must leave byte for byte: cue numbers and identifiers, timings
// and cue settings, the WebVTT header, NOTE, STYLE and REGION blocks, blank lines, line endings
// and a byte-order mark (docs/files.md).
//
// A cue's lines are read as one text (joined by spaces, so a sentence broken over two lines is
// one sentence) and its translation is broken again into as many lines, at spaces, lines of
// about equal length. A dialogue cue, every line opening with a dash, is one text per line. The
// formats' inline tags (<i>, <b>, <u>, <font ...>, WebVTT's <c.x>, <v Name>, <lang x>, <ruby>,
// <rt>, timestamps, and {\...} overrides) are lifted out as text::MarkedText tags, so they are
// carried over by the alignment as HTML's are.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "text/marked_text.h"
#include "text/unit_file.h"

namespace transerve::files {

enum class SubtitleFormat { kSubRip, kWebVtt };

class SubtitleFile : public text::UnitFile {
 public:
  // INVALID_ARGUMENT, saying why, for a file that is not of the format: a WebVTT file without
  // its WEBVTT line, text that is not UTF-8, a SubRip file with text but no timing line. Blocks
  // that are not cues inside an otherwise valid file are kept as they are.
  static absl::StatusOr<SubtitleFile> Parse(std::string_view file, SubtitleFormat format);

  // The texts to translate, in file order, inline tags lifted out (WebVTT's character
  // references decoded).
  const std::vector<text::MarkedText>& units() const override { return units_; }

  // Text runs of a translation are written through this before Render (text::InsertTags's
  // `escape`): WebVTT escapes &, < and >; SubRip has no escapes.
  std::string Escape(std::string_view text) const;
  std::string EscapeUnitText(size_t, std::string_view text) const override { return Escape(text); }

  // The file with unit i's text replaced by `translations[i]` (markup in place, text escaped),
  // each cue broken into its line count again. A unit given its own source back (InsertTags
  // over an identity alignment) is written as the file had it, so Render of the sources is the
  // file byte for byte.
  std::string Render(const std::vector<std::string>& translations) const override;

  size_t cue_count() const { return cues_.size(); }

 private:
  bool subrip() const { return format_ == SubtitleFormat::kSubRip; }
  struct Cue {
    size_t first_unit = 0;
    size_t unit_count = 0;     // 1, or one per line for a dialogue cue
    size_t line_count = 0;     // the text's lines in the file
    std::string line_ending;   // between re-broken lines: the first line's ("\n" or "\r\n")
    std::string last_ending;   // after the last line ("" at the end of the file)
    std::string source_bytes;  // the text's lines with their endings, as the file had them
  };
  // The file is layout, cue text, layout, cue text, ..., layout.
  struct Piece {
    std::string layout;  // bytes kept as they are, before the cue
    int cue = -1;        // the cue that follows, -1 after the last
  };

  SubtitleFormat format_ = SubtitleFormat::kSubRip;
  std::vector<Piece> pieces_;
  std::vector<Cue> cues_;
  std::vector<text::MarkedText> units_;
};

// Splits `markup` at spaces outside the format's tags into at most `lines` lines of about equal
// visible length (tags count for nothing). The spaces at the breaks are dropped.
std::vector<std::string> BreakIntoLines(std::string_view markup, size_t lines, bool subrip);

}  // namespace transerve::files
