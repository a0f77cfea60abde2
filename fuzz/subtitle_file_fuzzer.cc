// Fuzz target: the subtitle reader and writer. Any bytes are read as SubRip and as WebVTT; a
// file that parses is written back from its own units (it must come back byte for byte), then
// with every unit changed (the result must parse again, with every unit's markup lifted out).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "files/subtitle_file.h"
#include "files/subtitle_markup.h"

namespace {

using transerve::files::SubtitleFile;
using transerve::files::SubtitleFormat;

void Check(std::string_view input, SubtitleFormat format) {
  const bool subrip = format == SubtitleFormat::kSubRip;
  auto parsed = SubtitleFile::Parse(input, format);
  if (!parsed.ok()) return;
  std::vector<std::string> sources, changed;
  for (const auto& unit : parsed->units()) {
    sources.push_back(transerve::files::WriteSubtitleMarkup(unit, subrip));
    changed.push_back(sources.back() + " " + parsed->Escape("<&> x"));
  }
  if (parsed->Render(sources) != input) std::abort();
  auto again = SubtitleFile::Parse(parsed->Render(changed), format);
  if (!again.ok()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  Check(input, SubtitleFormat::kSubRip);
  Check(input, SubtitleFormat::kWebVtt);
  return 0;
}
