// Checks a TranslateRequest against the server's limits and the model, and turns it into what the
// scheduler takes: source ids per text and resolved decoding options. Runs on the gRPC thread
// before anything is queued, so the scheduler only ever sees valid work. Knows nothing of gRPC
// itself (only the generated messages), so it is unit-tested without a server.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/decoding/decoding_options.h"
#include "model/translator/translator.h"
#include "transerve/v1/translator.pb.h"

namespace transerve {

struct RequestLimits {
  int max_texts = 64;           // texts per request
  int max_text_chars = 4096;    // Unicode characters per text
  int max_source_tokens = 512;  // per text, after tokenization, EOS included
  int max_beam_size = 8;
  int max_length = 512;  // generated tokens per text, EOS included
};

struct PreparedRequest {
  std::vector<std::vector<int32_t>> sources;  // one per text, EOS included
  DecodingOptions options;
  bool return_scores = false;
  int64_t source_tokens = 0;
};

// Options of the request over the model's defaults (zero/unset fields keep the default).
// INVALID_ARGUMENT for values out of range for the model or the limits.
absl::StatusOr<DecodingOptions> ResolveOptions(const v1::DecodingOptions& requested,
                                               const Translator& translator,
                                               const RequestLimits& limits);

// INVALID_ARGUMENT: no texts, too many texts, a text too long, invalid UTF-8, too many source
// tokens, bad options. Tokenizes every text (Translator::Tokenize is const and thread-safe).
absl::StatusOr<PreparedRequest> PrepareRequest(const v1::TranslateRequest& request,
                                               const Translator& translator,
                                               const RequestLimits& limits);

// Number of Unicode code points of valid UTF-8 text.
int64_t CountCodePoints(std::string_view text);

}  // namespace transerve
