// DeepL's API v2 (and its v3 glossary routes) over transerve's Translator and Glossaries
// services, as functions from an HttpInput to an HttpReply, so that clients written for DeepL
// (its official libraries given a server URL, Weblate, CopyTranslator, ...) work unchanged; and
// the DeepLX dialect at /deeplx/translate. Routing is the server's.
//
// What differs from DeepL, on purpose or by nature:
// - Languages are those the loaded models (and pivots) serve. A target is taken in any form
//   that names the language ("EN", "EN-US", "en-gb", "deu"); variants of one language are one
//   model's output: EN-GB and EN-US give the same text.
// - formality "more"/"less" is 400 as DeepL answers for a target without formality (no model
//   here has it); "prefer_more"/"prefer_less" and "default" are accepted. ignore_tags is
//   honoured (their content is kept, as translate="no"). context, model_type,
//   preserve_formatting, outline_detection, splitting_tags and non_splitting_tags are accepted
//   and change nothing (layout is always kept; sentences are split by transerve's rules).
// - tag_handling "xml" reads the text as an HTML fragment (elements, attributes, entities):
//   XML that HTML parses differently (a self-closing unknown element such as <x/>) is not kept
//   as written.
// - Keys are the server's bearer tokens. Usage counts the characters this process translated
//   through /v2/translate; there is no quota, and character_limit is DeepL's "unlimited".
// - Errors carry DeepL's statuses: 400 bad request, 403 key, 404 unknown glossary, 413 too
//   large, 429 the queue is full, 456 the glossary store is full, 503 loading or draining, 504
//   deadline; each with {"message": ...}.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/http/http_exchange.h"
#include "server/http/translator_backend.h"

namespace transerve::http {

class DeeplApi {
 public:
  explicit DeeplApi(TranslatorBackend& backend) : backend_(backend) {}

  // POST /v2/translate: {"translations": [{"detected_source_language", "text"}, ...]}.
  HttpReply Translate(const HttpInput& input);
  // GET|POST /v2/languages (type=source|target).
  HttpReply Languages(const HttpInput& input);
  // GET|POST /v2/usage.
  HttpReply Usage(const HttpInput& input);
  // GET /v2/glossary-language-pairs: every pair served.
  HttpReply GlossaryLanguagePairs(const HttpInput& input);
  // /v2/glossaries[/ID[/entries]] and /v3/glossaries[/ID[/entries|/dictionaries]], every
  // method DeepL has there.
  HttpReply Glossaries(const HttpInput& input);
  // POST /deeplx/translate: {"text", "source_lang", "target_lang"} -> {"code": 200, "data", ...}.
  HttpReply DeeplxTranslate(const HttpInput& input);

 private:
  TranslatorBackend& backend_;
  std::atomic<int64_t> characters_{0};  // translated through /v2/translate since start
};

// {"message": message} with the status.
HttpReply DeeplErrorReply(int status, const std::string& message);

// Whether `path` is one of DeepL's routes here (its errors then take DeepL's shape).
bool IsDeeplPath(std::string_view path);

}  // namespace transerve::http
