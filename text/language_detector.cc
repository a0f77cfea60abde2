#include "text/language_detector.h"

#include "text/language_code.h"

// compact_lang_det.h uses FILE without including <cstdio>.
#include <cld2/public/compact_lang_det.h>
#include <cld2/public/encodings.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>

namespace transerve::text {
namespace {

// Below this many bytes of letters CLD2 has seen too few quadgrams to be sure, whatever share
// it reports: "Hallo" alone gives German 91%. Confidence grows linearly up to it. 64 bytes is
// about ten words of a Latin-script language or twenty CJK characters; the benchmark
// (bench/language_detection_bench.cc) shows errors concentrated below it.
constexpr int kFullEvidenceTextBytes = 64;

// CLD2 takes an int length; longer input is cut at a character boundary (the first 2 GiB say
// which language a text is in as well as the whole does).
std::string_view ClampToIntLength(std::string_view text) {
  constexpr size_t kMax = std::numeric_limits<int>::max();
  if (text.size() <= kMax) return text;
  size_t end = kMax;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

// CLD2's sets of statistically close languages (LanguageCloseSet), in our codes; unused slots
// are empty.
constexpr std::array<std::array<std::string_view, 4>, 9> kCloseGroups = {{
    {"bs", "hr", "sr", "sr-ME"},
    {"da", "nb", "nn"},
    {"cs", "sk"},
    {"es", "gl", "pt"},
    {"id", "ms"},
    {"hi", "ne", "bh", "mr"},
    {"xh", "zu"},
    {"bo", "dz"},
    {"rw", "rn"},
}};

// The only candidate in `code`'s close group, or "" when there is none or several.
std::string_view OnlyCloseCandidate(std::string_view code,
                                    const std::vector<std::string>& candidates) {
  for (const auto& group : kCloseGroups) {
    if (std::find(group.begin(), group.end(), code) == group.end()) continue;
    std::string_view only;
    for (std::string_view member : group) {
      if (member.empty()) continue;
      if (std::find(candidates.begin(), candidates.end(), member) == candidates.end()) continue;
      if (!only.empty()) return {};
      only = member;
    }
    return only;
  }
  return {};
}

bool IsRealLanguage(CLD2::Language language) {
  return language != CLD2::UNKNOWN_LANGUAGE && language != CLD2::TG_UNKNOWN_LANGUAGE;
}

}  // namespace

std::string NormalizeLanguageCode(std::string_view cld2_code) {
  // The codes requests and models use (language_code.h): "iw" -> "he", "zh-Hant" -> "zh",
  // "no" -> "nb", "jw" -> "jv"; what is no language code (CLD2's "un") stays as it is.
  std::string code = CanonicalLanguage(cld2_code);
  return code.empty() ? std::string(cld2_code) : code;
}

std::vector<DetectedLanguage> DetectLanguages(std::string_view text, bool is_html,
                                              int max_results) {
  std::vector<DetectedLanguage> out;
  text = ClampToIntLength(text);
  if (text.empty() || max_results <= 0) return out;

  const CLD2::CLDHints hints = {nullptr, nullptr, CLD2::UNKNOWN_ENCODING, CLD2::UNKNOWN_LANGUAGE};
  CLD2::Language language3[3];
  int percent3[3];
  // Despite its name this CLD2 build reports a raw score per KiB of text, on a scale that
  // differs by script (hundreds for Hebrew, thousands for Chinese), so it is not comparable
  // across languages and does not enter the confidence; only a zero (no evidence) does.
  double score3[3];
  int text_bytes = 0;
  bool reliable = false;
  int valid_prefix_bytes = 0;
  auto detect = [&](int flags) {
    return CLD2::ExtDetectLanguageSummaryCheckUTF8(
        text.data(), static_cast<int>(text.size()), !is_html, &hints, flags, language3, percent3,
        score3, /*resultchunkvector=*/nullptr, &text_bytes, &reliable, &valid_prefix_bytes);
  };
  CLD2::Language summary = detect(/*flags=*/0);
  // Invalid UTF-8: CLD2 stops at the first bad byte and reports nothing.
  if (valid_prefix_bytes < static_cast<int>(text.size())) return out;
  // By default CLD2 withholds an answer it finds unsure, even for clean sentences of 100
  // letters ("Se produjo un error al crear el fichero temporal y no se pudo determinar la
  // versión de la base de datos." gives nothing). Asking again for its best effort answers
  // those; on the benchmark about half of such answers are right (against 94% of the others),
  // so they count as unreliable and at half confidence.
  float weight = 1.0f;
  if (!IsRealLanguage(language3[0])) {
    summary = detect(CLD2::kCLDFlagBestEffort);
    reliable = false;
    weight = 0.5f;
  }

  const float evidence =
      std::min(1.0f, static_cast<float>(text_bytes) / static_cast<float>(kFullEvidenceTextBytes));
  for (int i = 0; i < 3; ++i) {
    if (!IsRealLanguage(language3[i]) || percent3[i] <= 0 || score3[i] <= 0) continue;
    std::string code = NormalizeLanguageCode(CLD2::LanguageCode(language3[i]));
    // "zh" and "zh-Hant" both become "zh": keep one entry, with their shares added.
    auto same = std::find_if(out.begin(), out.end(),
                             [&](const DetectedLanguage& d) { return d.code == code; });
    const float confidence = std::clamp(percent3[i] / 100.0f, 0.0f, 1.0f) * evidence * weight;
    if (same != out.end()) {
      same->confidence = std::min(1.0f, same->confidence + confidence);
      continue;
    }
    out.push_back({std::move(code), confidence, /*reliable=*/false});
  }
  // CLD2 orders by share already; merging can change that.
  std::stable_sort(out.begin(), out.end(),
                   [](const DetectedLanguage& a, const DetectedLanguage& b) {
                     return a.confidence > b.confidence;
                   });
  if (static_cast<int>(out.size()) > max_results) out.resize(max_results);
  // The flag is CLD2's verdict on its summary language, which can differ from the largest share
  // (it discounts English, French, Italian, German and Spanish next to another language as
  // web-page boilerplate; a request to translate has none, so we keep the largest share first).
  if (!out.empty()) {
    out.front().reliable = reliable && IsRealLanguage(summary) &&
                           out.front().code == NormalizeLanguageCode(CLD2::LanguageCode(summary));
  }
  return out;
}

std::vector<DetectedLanguage> DetectLanguagesAmong(std::string_view text,
                                                   const std::vector<std::string>& candidates,
                                                   bool is_html, int max_results) {
  std::vector<DetectedLanguage> out;
  for (DetectedLanguage& d : DetectLanguages(text, is_html, /*max_results=*/3)) {
    if (std::find(candidates.begin(), candidates.end(), d.code) == candidates.end()) {
      std::string_view sibling = OnlyCloseCandidate(d.code, candidates);
      if (sibling.empty()) continue;
      d.code = std::string(sibling);
    }
    auto same = std::find_if(out.begin(), out.end(),
                             [&](const DetectedLanguage& o) { return o.code == d.code; });
    if (same == out.end()) {
      out.push_back(std::move(d));
    } else {
      same->confidence = std::min(1.0f, same->confidence + d.confidence);
      same->reliable = same->reliable || d.reliable;
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const DetectedLanguage& a, const DetectedLanguage& b) {
                     return a.confidence > b.confidence;
                   });
  // Only the entry that was first overall can carry CLD2's flag; keep it first or drop it.
  for (size_t i = 1; i < out.size(); ++i) out[i].reliable = false;
  if (static_cast<int>(out.size()) > std::max(0, max_results)) out.resize(std::max(0, max_results));
  return out;
}

}  // namespace transerve::text
