#include "server/request_validation.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "model/tokenizer/utf8.h"
#include "text/utf8_chars.h"

namespace transerve {

absl::StatusOr<DecodingOptions> ResolveOptions(const v1::DecodingOptions& requested,
                                               const Translator& translator,
                                               const RequestLimits& limits) {
  DecodingOptions o = translator.DefaultOptions();
  o.return_alignment = requested.return_alignment();
  o.use_vocabulary_map = requested.use_vocabulary_map();
  if (requested.beam_size() < 0 || requested.max_length() < 0 || requested.min_length() < 0 ||
      requested.num_hypotheses() < 0) {
    return absl::InvalidArgumentError(
        "beam_size, max_length, min_length and num_hypotheses must not be negative");
  }
  if (requested.beam_size() > 0) o.beam_size = requested.beam_size();
  if (requested.max_length() > 0) o.max_length = requested.max_length();
  if (requested.min_length() > 0) o.min_length = requested.min_length();
  if (requested.has_length_penalty()) o.length_penalty = requested.length_penalty();
  o.num_hypotheses = requested.num_hypotheses() > 0 ? requested.num_hypotheses() : 1;
  // The server's limits cap the model's defaults too, so a default never exceeds them.
  if (requested.beam_size() == 0) o.beam_size = std::min(o.beam_size, limits.max_beam_size);
  if (requested.max_length() == 0) o.max_length = std::min(o.max_length, limits.max_length);
  // A default min_length follows a smaller max_length; an asked one over it is an error below.
  if (requested.min_length() == 0) o.min_length = std::min(o.min_length, o.max_length);
  if (o.beam_size > limits.max_beam_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "beam_size ", o.beam_size, " is over this server's limit of ", limits.max_beam_size));
  }
  if (o.max_length > limits.max_length) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_length ", o.max_length, " is over this server's limit of ", limits.max_length));
  }
  if (auto s = translator.ValidateOptions(o); !s.ok()) return s;
  return o;
}

absl::StatusOr<text::DocumentOptions> ResolveDocumentOptions(
    const v1::TranslateRequest& request, const RequestLimits& limits,
    std::shared_ptr<const text::TermTable> stored_glossary) {
  const v1::DocumentOptions& d = request.document();
  text::DocumentOptions o;
  switch (d.format()) {
    case v1::DocumentOptions::FORMAT_TEXT:
      o.format = text::Format::kText;
      break;
    case v1::DocumentOptions::FORMAT_HTML:
      o.format = text::Format::kHtml;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("document.format ", d.format(),
                                                     " is not FORMAT_TEXT (0) or FORMAT_HTML (1)"));
  }
  o.split_sentences = !d.has_split_sentences() || d.split_sentences();
  o.protect.detect = !d.has_protect_spans() || d.protect_spans();
  if (d.protected_terms_size() > limits.max_protected_terms) {
    return absl::InvalidArgumentError(
        absl::StrCat("document.protected_terms has ", d.protected_terms_size(),
                     " terms; the limit is ", limits.max_protected_terms));
  }
  std::vector<std::string> terms;
  for (int i = 0; i < d.protected_terms_size(); ++i) {
    const std::string& term = d.protected_terms(i);
    size_t bad = 0;
    if (term.empty() || !utf8::IsValid(term, &bad) || text::CountCodePoints(term) > 256) {
      return absl::InvalidArgumentError(absl::StrCat(
          "document.protected_terms[", i, "] must be 1 to 256 characters of valid UTF-8"));
    }
    terms.push_back(term);
  }
  if (!terms.empty()) o.protect.caller_terms = text::KeptTerms(terms);
  if (d.glossary_entries_size() > limits.max_glossary_entries) {
    return absl::InvalidArgumentError(absl::StrCat(
        "document.glossary_entries has ", d.glossary_entries_size(), " entries; the limit is ",
        limits.max_glossary_entries, " (store a larger glossary and name it in glossary_id)"));
  }
  std::vector<text::Term> entries;
  for (int i = 0; i < d.glossary_entries_size(); ++i) {
    const v1::GlossaryEntry& e = d.glossary_entries(i);
    for (const auto& [side, term] : {std::pair{"source", &e.source()}, {"target", &e.target()}}) {
      if (const std::string why = text::TermProblem(*term); !why.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("document.glossary_entries[", i, "]: the ", side, " term ", why));
      }
    }
    entries.push_back({e.source(), e.target()});
  }
  if (!entries.empty()) {
    o.protect.glossaries.push_back(
        std::make_shared<text::TermTable>(entries, text::TermCase::kSentenceAndCapitals));
  }
  if (stored_glossary != nullptr) o.protect.glossaries.push_back(std::move(stored_glossary));
  if (d.untranslated_elements_size() > 64) {
    return absl::InvalidArgumentError("document.untranslated_elements names over 64 elements");
  }
  for (int i = 0; i < d.untranslated_elements_size(); ++i) {
    std::string name = absl::AsciiStrToLower(d.untranslated_elements(i));
    const bool ok =
        !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
          return absl::ascii_isalnum(c) || c == '-' || c == '_' || c == ':';
        });
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("document.untranslated_elements[", i,
                       "] is not a tag name (1 to 64 letters, digits, '-', '_' or ':')"));
    }
    o.untranslated_elements.push_back(std::move(name));
  }
  return o;
}

const std::string& PreparedRequest::model_text(size_t i) const {
  // The last text starting at or before i (an empty text starts where the next one does).
  const auto after = std::upper_bound(texts.begin(), texts.end(), i,
                                      [](size_t s, const PreparedText& t) { return s < t.first; });
  auto it = std::prev(after);
  while (it->count() == 0) --it;
  return it->document.model_text(i - it->first);
}

absl::StatusOr<PreparedRequest> PrepareRequest(
    const v1::TranslateRequest& request, const Translator& translator, const RequestLimits& limits,
    const LanguageTokens& languages, const std::string& source_language,
    std::shared_ptr<const text::TermTable> stored_glossary) {
  if (request.texts().empty()) {
    return absl::InvalidArgumentError("texts is empty: give at least one text to translate");
  }
  if (request.texts_size() > limits.max_texts) {
    return absl::InvalidArgumentError(absl::StrCat("request has ", request.texts_size(),
                                                   " texts; this server accepts at most ",
                                                   limits.max_texts, " per request"));
  }
  PreparedRequest prepared;
  auto options = ResolveOptions(request.options(), translator, limits);
  if (!options.ok()) return options.status();
  prepared.options = *options;
  SegmentSettings settings;
  if (auto s = ApplyLanguageTokens(translator.tokenizer(), languages, &settings, &prepared.options);
      !s.ok()) {
    return s;
  }
  prepared.return_scores = request.options().return_scores();
  auto document_options = ResolveDocumentOptions(request, limits, std::move(stored_glossary));
  if (!document_options.ok()) return document_options.status();
  if (!source_language.empty()) document_options->language = source_language;
  settings.max_source_tokens = limits.max_source_tokens;
  settings.truncate = request.options().truncate();
  prepared.texts.reserve(request.texts_size());
  for (int i = 0; i < request.texts_size(); ++i) {
    const std::string& text = request.texts(i);
    size_t bad = 0;
    if (!utf8::IsValid(text, &bad)) {
      return absl::InvalidArgumentError(
          absl::StrCat("texts[", i, "] is not valid UTF-8 (at byte ", bad, ")"));
    }
    const int64_t chars = text::CountCodePoints(text);
    if (chars > limits.max_text_chars) {
      return absl::InvalidArgumentError(absl::StrCat(
          "texts[", i, "] has ", chars, " characters; the limit is ", limits.max_text_chars));
    }
    auto segments = SegmentDocument(translator, text, *document_options, settings);
    if (!segments.ok()) {
      return absl::Status(segments.status().code(),
                          absl::StrCat("texts[", i, "]: ", segments.status().message()));
    }
    if (prepared.sources.size() + segments->ids.size() >
        static_cast<size_t>(limits.max_sentences)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the request's texts hold more than ", limits.max_sentences,
                       " sentences, this server's limit per request: send fewer or shorter texts"));
    }
    PreparedText& prepared_text = prepared.texts.emplace_back();
    prepared_text.first = prepared.sources.size();
    for (size_t s = 0; s < segments->ids.size(); ++s) {
      prepared.source_tokens += static_cast<int64_t>(segments->ids[s].size());
      prepared.needs_alignment.push_back(segments->document.needs_alignment(s));
      prepared.sources.push_back(std::move(segments->ids[s]));
    }
    prepared_text.document = std::move(segments->document);
  }
  return prepared;
}

}  // namespace transerve
