// LibreTranslate's HTTP API (POST /translate, POST /detect, GET /languages,
// GET /frontend/settings) over transerve's Translator service, as functions from an HttpInput to
// an HttpReply, so that clients written for LibreTranslate work unchanged. Routing (which path
// and method call which function) is the server's.
//
// Differences from LibreTranslate kept on purpose:
// - A missing api key when the server requires one is 403 (LibreTranslate: 400 "Please contact
//   the server operator to get an API key"; the wording is kept), so that every key failure is
//   one status. An Authorization: Bearer header is accepted as the key and wins over api_key;
//   a JSON body's missing api_key is looked for in the query too.
// - GET /languages and /frontend/settings list the models as the server itself
//   (CallOptions::as_server), so they are open to anyone, as in LibreTranslate.
// - Language codes are compared in canonical form (text::CanonicalLanguage), so "deu" and "DE"
//   are German too; codes in answers are canonical (ISO 639-1 where one exists).
// - Languages are listed sorted by code, names in English from ICU (not argos' names).
// - Wrong JSON types LibreTranslate fails on with 500 (q a number, an array holding a
//   non-string, alternatives null or "abc") are 400; "alternatives" as a string parses like
//   Python's int() without its "_" digit separators. A source, target or format that is a JSON
//   array or object is named "[...]" / "{...}" in the error, not printed.
// - The text is not post-processed as argos output is (LibreTranslate's punctuation and case
//   "improvements" and its HTML unescaping): transerve's document pipeline restores layout,
//   markup and protected spans itself.
// - format "html" has alternatives as well (LibreTranslate: always []).
// - With source "auto" the language is detected here as LibreTranslate does it (among the
//   languages /languages lists, each text's detections merged, "en" with confidence 0 when
//   nothing is found), and the texts are then translated from the best one; an array q gets
//   that one detectedLanguage for every text, as LibreTranslate's does. The detector is
//   transerve's (CLD2), not LibreTranslate's, so confidences differ.
// - The server's own limits (texts per request, characters per text, beam size) apply on top
//   of LtSettings' and are reported as 400 with the server's wording; a full queue is 429
//   ("Slowdown: ..."), loading or draining 503, a passed deadline 504, a client gone 499.
// - /frontend/settings: apiKeys and keyRequired both say whether the server has keys; there are
//   no suggestions and no file translation.
// - An extension: "glossary_id" names a stored glossary (DeepL's glossary routes, the
//   Glossaries service) whose terms the translation uses.
#pragma once

#include <string>

#include "server/http/http_exchange.h"
#include "server/http/translator_backend.h"

namespace transerve::http {

struct LtSettings {
  // Characters (code points) per text (LibreTranslate's --char-limit); -1: none here.
  int char_limit = -1;
  // Texts per array q (--batch-limit); -1: none here.
  int batch_limit = -1;
  // The server's --max_beam_size: "alternatives" is at most this minus one (--alternatives-limit).
  int max_beam_size = 8;
  // The beam used when alternatives are asked for, raised to alternatives + 1 when that is more:
  // a beam only as wide as the alternatives asked for would translate worse than the model's.
  int alternatives_beam_size = 4;
  // /frontend/settings: the web page's timeout (--frontend-timeout, ms) and its languages
  // ("auto" or a code; a target not served falls back to the default model's).
  int frontend_timeout_ms = 500;
  std::string frontend_language_source = "auto";
  std::string frontend_language_target;
};

// POST /translate: {"translatedText": ..., "detectedLanguage": ..., "alternatives": ...}.
HttpReply LtTranslate(const HttpInput& input, TranslatorBackend& backend,
                      const LtSettings& settings = {});
// POST /detect: [{"confidence": 0..100, "language": code}, ...], best first, among the languages
// GET /languages lists (as LibreTranslate: a language a model only writes is one too).
HttpReply LtDetect(const HttpInput& input, TranslatorBackend& backend);
// GET /languages: [{"code", "name", "targets": [...]}, ...].
HttpReply LtLanguages(const HttpInput& input, TranslatorBackend& backend);
// GET /frontend/settings.
HttpReply LtFrontendSettings(const HttpInput& input, TranslatorBackend& backend,
                             const LtSettings& settings);

// An error reply of LibreTranslate's shape: {"error": message}.
HttpReply LtErrorReply(int status, const std::string& message);
// The reply for a failed backend call: its status mapped to LibreTranslate's codes (400 for the
// request's own faults, 403 keys, 429 queue full, 503, 504, 499; 500 for the rest).
// `api_key_given` picks the wording of a key failure.
HttpReply LtBackendError(const grpc::Status& status, bool api_key_given);

}  // namespace transerve::http
