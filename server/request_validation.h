// Checks a TranslateRequest against the server's limits and the model, and turns it into what the
// scheduler takes: each text read as a document (text/), its segments' source ids, and resolved
// decoding options. Runs on the gRPC thread before anything is queued, so the scheduler only
// ever sees valid work. Knows nothing of gRPC itself (only the generated messages), so it is
// unit-tested without a server.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/decoding/decoding_options.h"
#include "model/translator/translator.h"
#include "pipeline/document_segments.h"
#include "server/model_languages.h"
#include "text/document.h"
#include "text/term_table.h"
#include "transerve/v1/translator.pb.h"

namespace transerve {

struct RequestLimits {
  int max_texts = 64;               // texts per request
  int max_text_chars = 100000;      // Unicode characters per text (a document)
  int max_sentences = 4096;         // segments per request, all texts together
  int max_source_tokens = 512;      // per segment, after tokenization, EOS included
  int max_protected_terms = 256;    // DocumentOptions.protected_terms
  int max_glossary_entries = 1000;  // DocumentOptions.glossary_entries
  int max_beam_size = 8;
  int max_length = 512;  // generated tokens per segment, EOS included
};

// One text of the request as a document, and where its segments sit in `sources`.
struct PreparedText {
  text::Document document;
  size_t first = 0;  // its first segment's index in PreparedRequest::sources
  size_t count() const { return document.segment_count(); }
};

struct PreparedRequest {
  std::vector<std::vector<int32_t>> sources;  // every text's segments in order, EOS included
  std::vector<bool> needs_alignment;          // per source: the text layer must see its alignment
  std::vector<PreparedText> texts;            // one per text
  DecodingOptions options;
  bool return_scores = false;
  int64_t source_tokens = 0;

  // What the model translates for source `i` (its document's segment, stand-ins in place).
  const std::string& model_text(size_t i) const;
};

// The document options a request asks for, its own glossary entries among them (before
// `stored_glossary`, the table of the glossary it names, if any: its entries win a tie).
// INVALID_ARGUMENT for an unknown format or bad terms.
absl::StatusOr<text::DocumentOptions> ResolveDocumentOptions(
    const v1::TranslateRequest& request, const RequestLimits& limits,
    std::shared_ptr<const text::TermTable> stored_glossary = nullptr);

// Options of the request over the model's defaults (zero/unset fields keep the default).
// INVALID_ARGUMENT for values out of range for the model or the limits.
absl::StatusOr<DecodingOptions> ResolveOptions(const v1::DecodingOptions& requested,
                                               const Translator& translator,
                                               const RequestLimits& limits);

// INVALID_ARGUMENT: no texts, too many texts, a text too long, invalid UTF-8, too many
// segments, a segment over the token limit (only with sentence splitting off), bad options.
// Segments and tokenizes every text (Translator::Tokenize is const and thread-safe).
// `languages` tell a multilingual model the pair: a target token goes before every segment or
// is forced first, a source token starts every source. `stored_glossary`: as
// ResolveDocumentOptions.
absl::StatusOr<PreparedRequest> PrepareRequest(
    const v1::TranslateRequest& request, const Translator& translator, const RequestLimits& limits,
    const LanguageTokens& languages = {}, const std::string& source_language = "",
    std::shared_ptr<const text::TermTable> stored_glossary = nullptr);

}  // namespace transerve
