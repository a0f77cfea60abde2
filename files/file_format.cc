#include "files/file_format.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "files/subtitle_file.h"

namespace transerve::files {

namespace {

constexpr std::pair<std::string_view, FileFormat> kExtensions[] = {
    {"srt", FileFormat::kSubRip},
    {"vtt", FileFormat::kWebVtt},
};

}  // namespace

std::optional<FileFormat> FormatOfName(std::string_view name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::string extension(name.substr(dot + 1));
  for (char& c : extension) c = absl::ascii_tolower(static_cast<unsigned char>(c));
  for (const auto& [known, format] : kExtensions) {
    if (extension == known) return format;
  }
  return std::nullopt;
}

std::string KnownExtensions() {
  std::string out;
  for (const auto& [known, format] : kExtensions) {
    if (!out.empty()) out += ", ";
    out += ".";
    out += known;
  }
  return out;
}

absl::StatusOr<std::unique_ptr<text::UnitFile>> ReadFile(std::string_view bytes,
                                                         FileFormat format) {
  auto subtitles = SubtitleFile::Parse(
      bytes, format == FileFormat::kSubRip ? SubtitleFormat::kSubRip : SubtitleFormat::kWebVtt);
  if (!subtitles.ok()) return subtitles.status();
  return std::make_unique<SubtitleFile>(*std::move(subtitles));
}

}  // namespace transerve::files
