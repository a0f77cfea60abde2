// Which language a text is in (CLD2), with a confidence, for source_language = "auto".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace transerve::text {

struct DetectedLanguage {
  std::string code;       // ISO 639-1 where one exists ("de", "zh", "pt"), else CLD2's code
  float confidence = 0;   // 0..1: how much of the text, and how surely, is in this language
  bool reliable = false;  // the detector's own judgement
};

// Best guesses first (at most `max_results`); empty when nothing could be detected. `is_html`
// skips tags and entities.
std::vector<DetectedLanguage> DetectLanguages(std::string_view text, bool is_html = false,
                                              int max_results = 3);

}  // namespace transerve::text
