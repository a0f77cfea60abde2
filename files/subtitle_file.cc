#include "files/subtitle_file.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "files/subtitle_markup.h"
#include "text/utf8_chars.h"

namespace transerve::files {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// One line of the file: its bytes and its ending ("\r\n", "\n", or "" at the end of the file).
struct Line {
  std::string_view text;
  std::string_view ending;
  std::string_view whole() const { return {text.data(), text.size() + ending.size()}; }
};

std::vector<Line> SplitLines(std::string_view file) {
  std::vector<Line> lines;
  size_t pos = 0;
  while (pos < file.size()) {
    const size_t newline = file.find('\n', pos);
    if (newline == std::string_view::npos) {
      lines.push_back({file.substr(pos), {}});
      break;
    }
    size_t end = newline;
    if (end > pos && file[end - 1] == '\r') --end;
    lines.push_back({file.substr(pos, end - pos), file.substr(end, newline + 1 - end)});
    pos = newline + 1;
  }
  return lines;
}

std::string_view StripSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IsBlank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t'; });
}

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Reads [[hh:]mm:]ss followed by `fraction` (',' or '.') and 1-3 digits at s[*pos]; SubRip
// writes hh:mm:ss,mmm, WebVTT [hh:]mm:ss.mmm. Players accept both separators in SubRip.
bool ReadTimestamp(std::string_view s, size_t* pos, bool subrip) {
  size_t p = *pos;
  int fields = 0;
  while (true) {
    const size_t start = p;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9') ++p;
    if (p == start) return false;
    ++fields;
    if (p < s.size() && s[p] == ':' && fields < 3) {
      ++p;
      continue;
    }
    break;
  }
  if (fields < 2) return false;
  if (p >= s.size() || !(s[p] == '.' || (subrip && s[p] == ','))) return false;
  ++p;
  const size_t start = p;
  while (p < s.size() && s[p] >= '0' && s[p] <= '9') ++p;
  if (p == start || p - start > 3) return false;
  *pos = p;
  return true;
}

// "start --> end[ settings]": a cue's timing line.
bool IsTimingLine(std::string_view line, bool subrip) {
  size_t p = 0;
  while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
  if (!ReadTimestamp(line, &p, subrip)) return false;
  while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
  if (line.substr(p, 3) != "-->") return false;
  p += 3;
  while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
  return ReadTimestamp(line, &p, subrip);
}

// A WebVTT block that is not a cue: the keyword alone or followed by white space.
bool StartsWebVttBlock(std::string_view line, std::string_view keyword) {
  if (!line.starts_with(keyword)) return false;
  return line.size() == keyword.size() || line[keyword.size()] == ' ' ||
         line[keyword.size()] == '\t';
}

bool IsDialogue(const std::vector<std::string>& lines) {
  if (lines.size() < 2) return false;
  return std::all_of(lines.begin(), lines.end(), [](const std::string& l) {
    const std::string_view t = StripSpaces(l);
    return t.starts_with("-") || t.starts_with("\xE2\x80\x93") ||  // en dash
           t.starts_with("\xE2\x80\x94");                          // em dash
  });
}

}  // namespace

absl::StatusOr<SubtitleFile> SubtitleFile::Parse(std::string_view file, SubtitleFormat format) {
  const bool subrip = format == SubtitleFormat::kSubRip;
  const char* name = subrip ? "SubRip" : "WebVTT";
  for (size_t pos = 0; pos < file.size();) {
    size_t length = 0;
    if (text::CharAt(file, pos, &length) < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("not a ", name, " file: invalid UTF-8 at byte ", pos));
    }
    pos += length;
  }
  SubtitleFile out;
  out.format_ = format;
  std::string_view body = file;
  std::string layout;
  if (body.starts_with(kByteOrderMark)) {
    layout.append(kByteOrderMark);
    body.remove_prefix(kByteOrderMark.size());
  }
  const std::vector<Line> lines = SplitLines(body);
  size_t i = 0;
  if (!subrip) {
    if (lines.empty() || !StartsWebVttBlock(lines[0].text, "WEBVTT")) {
      return absl::InvalidArgumentError(
          "not a WebVTT file: its first line must be WEBVTT (alone or followed by a space)");
    }
    // The header: up to the first blank line.
    for (; i < lines.size() && !(i > 0 && IsBlank(lines[i].text)); ++i) {
      layout.append(lines[i].whole());
    }
  }
  bool any_timing = false;
  while (i < lines.size()) {
    if (IsBlank(lines[i].text)) {
      layout.append(lines[i++].whole());
      continue;
    }
    // A block: lines up to the next blank one.
    size_t end = i;
    while (end < lines.size() && !IsBlank(lines[end].text)) ++end;
    if (!subrip &&
        (StartsWebVttBlock(lines[i].text, "NOTE") || StartsWebVttBlock(lines[i].text, "STYLE") ||
         StartsWebVttBlock(lines[i].text, "REGION"))) {
      for (; i < end; ++i) layout.append(lines[i].whole());
      continue;
    }
    // The timing line is the block's first or second (after a number or an identifier).
    size_t timing = end;
    for (size_t j = i; j < std::min(end, i + 2); ++j) {
      if (IsTimingLine(lines[j].text, subrip)) {
        timing = j;
        break;
      }
    }
    if (timing == end) {  // not a cue: kept as it is
      for (; i < end; ++i) layout.append(lines[i].whole());
      continue;
    }
    any_timing = true;
    for (; i <= timing; ++i) layout.append(lines[i].whole());
    // The text: up to the blank line, or (SubRip files that left out the blank line) up to a
    // number followed by a timing line.
    size_t text_end = i;
    while (text_end < end && !(subrip && text_end + 1 < end && IsDigits(lines[text_end].text) &&
                               IsTimingLine(lines[text_end + 1].text, subrip))) {
      ++text_end;
    }
    if (text_end == i) continue;
    Cue cue;
    cue.first_unit = out.units_.size();
    cue.line_count = text_end - i;
    cue.line_ending = std::string(lines[i].ending.empty() ? "\n" : lines[i].ending);
    cue.last_ending = std::string(lines[text_end - 1].ending);
    std::vector<std::string> source_lines;
    for (size_t j = i; j < text_end; ++j) {
      source_lines.emplace_back(lines[j].text);
      cue.source_bytes.append(lines[j].whole());
    }
    std::vector<std::string> unit_sources;
    if (IsDialogue(source_lines)) {
      unit_sources = std::move(source_lines);
    } else {
      std::string joined;
      for (const std::string& l : source_lines) {
        if (!joined.empty()) joined.push_back(' ');
        joined.append(StripSpaces(l));
      }
      unit_sources.push_back(std::move(joined));
    }
    cue.unit_count = unit_sources.size();
    for (const std::string& source : unit_sources) {
      out.units_.push_back(LiftSubtitleTags(source, subrip));
    }
    out.pieces_.push_back({std::move(layout), static_cast<int>(out.cues_.size())});
    layout.clear();
    out.cues_.push_back(std::move(cue));
    i = text_end;
  }
  const bool all_blank =
      std::all_of(lines.begin(), lines.end(), [](const Line& l) { return IsBlank(l.text); });
  if (subrip && !any_timing && !all_blank) {
    return absl::InvalidArgumentError(
        "not a SubRip file: no cue timing line (hh:mm:ss,mmm --> hh:mm:ss,mmm) was found");
  }
  out.pieces_.push_back({std::move(layout), -1});
  return out;
}

std::string SubtitleFile::Escape(std::string_view text) const {
  return EscapeSubtitleText(text, subrip());
}

std::string SubtitleFile::Render(const std::vector<std::string>& translations) const {
  // A unit missing from `translations` keeps its source.
  auto translation = [&](size_t u) {
    return u < translations.size() ? translations[u] : WriteSubtitleMarkup(units_[u], subrip());
  };
  std::string out;
  for (const Piece& piece : pieces_) {
    out.append(piece.layout);
    if (piece.cue < 0) continue;
    const Cue& cue = cues_[static_cast<size_t>(piece.cue)];
    std::vector<std::string> lines;
    bool unchanged = true;
    for (size_t u = cue.first_unit; u < cue.first_unit + cue.unit_count; ++u) {
      lines.push_back(translation(u));
      unchanged = unchanged && lines.back() == WriteSubtitleMarkup(units_[u], subrip());
    }
    if (unchanged) {  // the cue's lines as the file had them
      out.append(cue.source_bytes);
      continue;
    }
    if (cue.unit_count == 1) lines = BreakIntoLines(lines[0], cue.line_count, subrip());
    for (size_t l = 0; l < lines.size(); ++l) {
      out.append(lines[l]);
      out.append(l + 1 < lines.size() ? cue.line_ending : cue.last_ending);
    }
  }
  return out;
}

std::vector<std::string> BreakIntoLines(std::string_view markup, size_t lines, bool subrip) {
  // The spaces outside tags where a line may end, with the visible length before each.
  struct Break {
    size_t byte;
    int64_t visible;
  };
  std::vector<Break> breaks;
  int64_t visible = 0;
  for (size_t p = 0; p < markup.size();) {
    const size_t tag_end = SubtitleTagEnd(markup, p, subrip);
    if (tag_end > p) {
      p = tag_end;
      continue;
    }
    if (markup[p] == ' ') breaks.push_back({p, visible});
    visible += (static_cast<uint8_t>(markup[p]) & 0xC0) != 0x80;
    ++p;
  }
  std::vector<std::string> out;
  size_t start = 0;
  int64_t previous = -1;  // the visible length at the last break taken
  for (size_t k = 1; k < lines && !breaks.empty(); ++k) {
    const double target =
        static_cast<double>(visible) * static_cast<double>(k) / static_cast<double>(lines);
    // The break nearest the target, after the previous one.
    const Break* best = nullptr;
    for (const Break& b : breaks) {
      if (b.visible <= previous) continue;
      if (best == nullptr || std::abs(static_cast<double>(b.visible) - target) <
                                 std::abs(static_cast<double>(best->visible) - target)) {
        best = &b;
      }
    }
    if (best == nullptr) break;
    out.emplace_back(markup.substr(start, best->byte - start));
    start = best->byte + 1;
    previous = best->visible;
  }
  out.emplace_back(markup.substr(start));
  return out;
}

}  // namespace transerve::files
