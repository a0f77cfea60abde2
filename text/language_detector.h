// Which language a text is in (CLD2), with a confidence, for source_language = "auto".
//
// Codes: ISO 639-1 where one exists. CLD2's own codes differ for a few languages and are
// mapped: "iw" -> "he" (Hebrew), "zh-Hant" -> "zh" (Chinese in either script: the script is not
// a different source language for routing), "no" -> "nb" (CLD2's NORWEGIAN is trained on
// Bokmål; Nynorsk is its own "nn"), "jw" -> "jv" (Javanese). Languages without a two-letter code
// keep CLD2's code ("ceb", "haw", "sr-ME").
//
// Thread-safe: CLD2 keeps its tables constant and its scoring state on the stack of each call;
// its only mutable statics are two variables of its debug printing (never enabled here) that
// every call resets to the same constant, a formal race without effect. This file keeps no
// state at all.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace transerve::text {

struct DetectedLanguage {
  std::string code;  // ISO 639-1 where one exists ("de", "zh", "pt", "he", "nb"), else CLD2's code
  // 0..1: the share of the text's letters CLD2 attributed to this language, scaled down for
  // texts too short to be sure of (under 64 bytes of letters), and halved when CLD2 gave it
  // only when asked for its best effort (see the .cc). Shares of all entries add up to <= 1.
  float confidence = 0;
  // CLD2's own judgement that its chosen language is right; set on the first entry only, and
  // only when that entry is the language CLD2 chose (see the .cc on boilerplate).
  bool reliable = false;
  friend bool operator==(const DetectedLanguage&, const DetectedLanguage&) = default;
};

// Best guesses first, by confidence (at most `max_results`, CLD2 gives at most 3); empty when
// nothing could be detected (no letters, only digits or symbols) and when `text` is not valid
// UTF-8. `is_html` skips tags and expands entities.
std::vector<DetectedLanguage> DetectLanguages(std::string_view text, bool is_html = false,
                                              int max_results = 3);

// DetectLanguages for a caller that can only use some languages (a server with models for these
// source languages): answers outside `candidates` are dropped, except that an answer in a group
// of languages CLD2 itself treats as close (bs/hr/sr, da/nb/nn, cs/sk, es/gl/pt, id/ms, and a few
// outside Europe) is reported as the group's only candidate when there is exactly one: with
// candidates {hr, ...} and no bs or sr, a "bs" answer becomes "hr" (CLD2 tells Croatian from
// Bosnian and Serbian only about half the time; see bench/results/language_detection.json).
// Candidates are codes as DetectLanguages reports them.
std::vector<DetectedLanguage> DetectLanguagesAmong(std::string_view text,
                                                   const std::vector<std::string>& candidates,
                                                   bool is_html = false, int max_results = 3);

// CLD2's code mapped to the code DetectLanguages reports ("iw" -> "he"); others unchanged.
std::string NormalizeLanguageCode(std::string_view cld2_code);

}  // namespace transerve::text
