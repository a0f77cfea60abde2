#include "server/http/deepl_api.h"

#include <nlohmann/json.hpp>
#include <set>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/grpc_status.h"
#include "server/http/deepl_request.h"
#include "server/http/libretranslate_languages.h"
#include "server/http/native_api.h"
#include "text/language_code.h"
#include "text/language_detector.h"
#include "text/utf8_chars.h"

namespace transerve::http {
namespace {

using Json = nlohmann::json;

// DeepL Pro's answer for an account without a character limit.
constexpr int64_t kUnlimited = 1000000000000;

HttpReply JsonReply(int status, const Json& body) {
  HttpReply r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  return r;
}

HttpReply NoContent() {
  HttpReply r;
  r.status = 204;
  r.content_type = "text/plain";
  return r;
}

HttpReply ErrorOf(const DeeplError& e) { return DeeplErrorReply(e.status, e.message); }

// A failed backend call: the native API's status for its code (HttpStatusOf), but a key
// failure is 403 as DeepL answers it; DeepL's {"message"} body.
HttpReply BackendError(const grpc::Status& s) {
  const grpc::StatusCode code = s.error_code();
  if (code == grpc::StatusCode::UNAUTHENTICATED || code == grpc::StatusCode::PERMISSION_DENIED) {
    return DeeplErrorReply(403, "Authorization failure: a wrong or missing key");
  }
  const int status = HttpStatusOf(code);
  const std::string& m = s.error_message();
  if (status == 429) return DeeplErrorReply(status, absl::StrCat("Too many requests: ", m));
  return DeeplErrorReply(status, m.empty() ? CodeName(code) : m);
}

// The models (what the languages are checked against, and the key with them), or the reply
// that ends the request.
std::variant<LtLanguageTable, HttpReply> ServedLanguages(TranslatorBackend& backend,
                                                         const CallOptions& options,
                                                         v1::ListModelsResponse* models) {
  if (const grpc::Status s = backend.ListModels(options, models); !s.ok()) {
    return BackendError(s);
  }
  return LtLanguageTable(*models);
}

// The glossary store's limits are a quota (456), not a full queue.
HttpReply GlossaryError(const grpc::Status& s) {
  if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
    return DeeplErrorReply(456, absl::StrCat("Quota exceeded: ", s.error_message()));
  }
  return BackendError(s);
}

CallOptions OptionsOf(const HttpInput& input, const DeeplFields& fields) {
  CallOptions o;
  o.bearer_token = DeeplAuthKey(input, fields);
  o.timeout_ms = input.timeout_ms;
  return o;
}

std::variant<DeeplFields, HttpReply> Fields(const HttpInput& input) {
  auto f = DeeplFields::Read(input);
  if (auto* e = std::get_if<DeeplError>(&f)) return ErrorOf(*e);
  return std::get<DeeplFields>(std::move(f));
}

// What /v2/translate and DeepLX ask for, read and checked.
struct TranslateArgs {
  std::vector<std::string> texts;
  std::string source_lang;  // as sent; "" = detect
  std::string target_lang;
  std::string tag_handling;  // "", "html", "xml"
  std::string split_sentences = "1";
  std::string formality;
  std::string glossary_id;
  std::vector<std::string> ignore_tags;
};

struct Translated {
  std::vector<std::string> texts;
  std::string source;  // canonical, as named or detected; "" when unknown
};

std::optional<DeeplError> CheckOptions(const TranslateArgs& a) {
  if (a.tag_handling != "" && a.tag_handling != "html" && a.tag_handling != "xml") {
    return DeeplError{400, "Value for 'tag_handling' not supported."};
  }
  if (a.split_sentences != "0" && a.split_sentences != "1" && a.split_sentences != "nonewlines") {
    return DeeplError{400, "Value for 'split_sentences' not supported."};
  }
  static const std::set<std::string> kFormality = {"",     "default",     "prefer_more",
                                                   "more", "prefer_less", "less"};
  if (!kFormality.count(a.formality)) {
    return DeeplError{400, "Value for 'formality' not supported."};
  }
  if (a.formality == "more" || a.formality == "less") {
    return DeeplError{400, "'formality' is not supported for given 'target_lang'."};
  }
  if (!a.glossary_id.empty() && a.source_lang.empty()) {
    return DeeplError{400,
                      "Use of a glossary requires the 'source_lang' parameter to be specified."};
  }
  return std::nullopt;
}

// The source language of the model that answered (a pivot's first), from the listing.
std::string ModelSource(const v1::ListModelsResponse& models, const v1::TranslateResponse& r) {
  const std::string& name = r.has_pivot() ? r.pivot().first_model() : r.model();
  for (const v1::ModelInfo& m : models.models()) {
    if (m.name() == name && m.source_language() != "mul") {
      return text::CanonicalLanguage(m.source_language());
    }
  }
  return "";
}

// Checks the languages, detects an unnamed source among those served, translates.
std::variant<Translated, HttpReply> RunTranslate(TranslatorBackend& backend, const TranslateArgs& a,
                                                 const CallOptions& options) {
  if (auto e = CheckOptions(a)) return ErrorOf(*e);
  v1::ListModelsResponse models;
  auto served = ServedLanguages(backend, options, &models);
  if (auto* reply = std::get_if<HttpReply>(&served)) return *reply;
  const LtLanguageTable& table = std::get<LtLanguageTable>(served);
  const std::string target = FromDeeplLanguage(a.target_lang);
  if (target.empty() || !table.Lists(target)) {
    return DeeplErrorReply(400, "Value for 'target_lang' not supported.");
  }
  const bool html = !a.tag_handling.empty();
  std::string source;
  if (!a.source_lang.empty()) {
    source = FromDeeplLanguage(a.source_lang);
    if (source.empty() || !table.AcceptsSource(source)) {
      return DeeplErrorReply(400, "Value for 'source_lang' not supported.");
    }
  } else {
    // Among the languages some model reads, as DeepL detects among its own.
    std::vector<std::string> candidates;
    for (const LtLanguage& l : table.list()) {
      if (!l.targets.empty() && l.code != target) candidates.push_back(l.code);
    }
    std::string all;
    for (const std::string& t : a.texts) absl::StrAppend(&all, t, "\n");
    const auto found = table.ReadsAnyLanguage() ? text::DetectLanguages(all, html)
                                                : text::DetectLanguagesAmong(all, candidates, html);
    if (!found.empty()) source = found.front().code;
  }
  if (!source.empty() && !table.Serves(source, target)) {
    return DeeplErrorReply(400, absl::StrCat("No model here translates ", ToDeeplSource(source),
                                             " into ", absl::AsciiStrToUpper(a.target_lang)));
  }
  v1::TranslateRequest r;
  for (const std::string& t : a.texts) r.add_texts(t);
  r.set_source_language(source);
  r.set_target_language(target);
  if (html) r.mutable_document()->set_format(v1::DocumentOptions::FORMAT_HTML);
  if (a.split_sentences == "0") r.mutable_document()->set_split_sentences(false);
  r.mutable_document()->set_glossary_id(a.glossary_id);
  if (html) {
    for (const std::string& tag : a.ignore_tags)
      r.mutable_document()->add_untranslated_elements(tag);
  }
  v1::TranslateResponse response;
  if (const grpc::Status s = backend.Translate(r, options, &response); !s.ok()) {
    return BackendError(s);
  }
  Translated out;
  for (const v1::Translation& t : response.translations()) out.texts.push_back(t.text());
  out.source = !source.empty() ? source
               : !response.detected_language().empty()
                   ? text::CanonicalLanguage(response.detected_language())
                   : ModelSource(models, response);
  return out;
}

Json GlossaryV2(const v1::Glossary& g) {
  const v1::GlossaryDictionary& d = g.dictionaries(0);
  return {{"glossary_id", g.glossary_id()},
          {"name", g.name()},
          {"ready", true},
          {"source_lang", d.source_language()},
          {"target_lang", d.target_language()},
          {"creation_time", g.creation_time()},
          {"entry_count", d.entry_count()}};
}

Json DictionaryInfo(const v1::GlossaryDictionary& d) {
  return {{"source_lang", d.source_language()},
          {"target_lang", d.target_language()},
          {"entry_count", d.entry_count()}};
}

Json GlossaryV3(const v1::Glossary& g) {
  Json dictionaries = Json::array();
  for (const v1::GlossaryDictionary& d : g.dictionaries()) {
    dictionaries.push_back(DictionaryInfo(d));
  }
  return {{"glossary_id", g.glossary_id()},
          {"name", g.name()},
          {"dictionaries", std::move(dictionaries)},
          {"creation_time", g.creation_time()}};
}

// One dictionary from source_lang, target_lang, entries and entries_format fields (named with
// `prefix`, e.g. "dictionaries[0].").
std::variant<v1::GlossaryDictionary, DeeplError> ReadDictionary(const DeeplFields& f,
                                                                const std::string& prefix) {
  v1::GlossaryDictionary d;
  for (const char* name : {"source_lang", "target_lang", "entries"}) {
    if (!f.Get(prefix + name)) {
      return DeeplError{400, absl::StrCat("Parameter '", prefix, name, "' not specified.")};
    }
  }
  d.set_source_language(*f.Get(prefix + "source_lang"));
  d.set_target_language(*f.Get(prefix + "target_lang"));
  auto entries = ParseGlossaryEntries(*f.Get(prefix + "entries"),
                                      f.Get(prefix + "entries_format").value_or(""));
  if (auto* e = std::get_if<DeeplError>(&entries)) return *e;
  for (const text::Term& t : std::get<std::vector<text::Term>>(entries)) {
    v1::GlossaryEntry* e = d.add_entries();
    e->set_source(t.source);
    e->set_target(t.target);
  }
  return d;
}

// v3's dictionaries: form fields dictionaries[N].x, or a JSON array of objects.
std::variant<std::vector<v1::GlossaryDictionary>, DeeplError> ReadDictionaries(
    const DeeplFields& f) {
  std::vector<v1::GlossaryDictionary> out;
  const std::vector<std::string> json = f.GetAll("dictionaries");
  for (size_t i = 0; i < json.size(); ++i) {
    // Each element came as its JSON text (DeeplFields keeps objects so).
    HttpInput one;
    one.content_type = "application/json";
    one.body = json[i];
    auto fields = DeeplFields::Read(one);
    if (auto* e = std::get_if<DeeplError>(&fields)) return *e;
    auto d = ReadDictionary(std::get<DeeplFields>(fields), "");
    if (auto* e = std::get_if<DeeplError>(&d)) {
      return DeeplError{e->status, absl::StrCat("dictionaries[", i, "]: ", e->message)};
    }
    out.push_back(std::get<v1::GlossaryDictionary>(std::move(d)));
  }
  for (int i = 0; json.empty() && f.Has(absl::StrCat("dictionaries[", i, "].source_lang")); ++i) {
    auto d = ReadDictionary(f, absl::StrCat("dictionaries[", i, "]."));
    if (auto* e = std::get_if<DeeplError>(&d)) return *e;
    out.push_back(std::get<v1::GlossaryDictionary>(std::move(d)));
  }
  return out;
}

}  // namespace

HttpReply DeeplErrorReply(int status, const std::string& message) {
  return JsonReply(status, Json{{"message", message}});
}

bool IsDeeplPath(std::string_view path) {
  for (const std::string_view exact : {"/v2/translate", "/v2/languages", "/v2/usage",
                                       "/v2/glossary-language-pairs", "/deeplx/translate"}) {
    if (path == exact) return true;
  }
  for (const std::string_view prefix : {"/v2/glossaries", "/v3/glossaries"}) {
    if (path.substr(0, prefix.size()) == prefix &&
        (path.size() == prefix.size() || path[prefix.size()] == '/')) {
      return true;
    }
  }
  return false;
}

HttpReply DeeplApi::Translate(const HttpInput& input) {
  auto fields = Fields(input);
  if (auto* reply = std::get_if<HttpReply>(&fields)) return *reply;
  const DeeplFields& f = std::get<DeeplFields>(fields);
  TranslateArgs a;
  a.texts = f.GetAll("text");
  if (a.texts.empty()) return DeeplErrorReply(400, "Parameter 'text' not specified.");
  if (!f.Get("target_lang")) return DeeplErrorReply(400, "Parameter 'target_lang' not specified.");
  a.target_lang = *f.Get("target_lang");
  a.source_lang = f.Get("source_lang").value_or("");
  a.tag_handling = absl::AsciiStrToLower(f.Get("tag_handling").value_or(""));
  a.split_sentences =
      f.Get("split_sentences").value_or(a.tag_handling.empty() ? "1" : "nonewlines");
  a.formality = f.Get("formality").value_or("");
  a.glossary_id = f.Get("glossary_id").value_or("");
  a.ignore_tags = f.GetList("ignore_tags");
  auto done = RunTranslate(backend_, a, OptionsOf(input, f));
  if (auto* reply = std::get_if<HttpReply>(&done)) return *reply;
  const Translated& t = std::get<Translated>(done);
  const bool billed = f.Get("show_billed_characters").value_or("0") == "1" ||
                      f.Get("show_billed_characters").value_or("") == "true";
  const std::optional<std::string> model_type = f.Get("model_type");
  Json translations = Json::array();
  for (size_t i = 0; i < t.texts.size(); ++i) {
    const int64_t chars = text::CountCodePoints(a.texts[i]);
    characters_ += chars;
    Json one = {{"detected_source_language", ToDeeplSource(t.source)}, {"text", t.texts[i]}};
    if (billed) one["billed_characters"] = chars;
    if (model_type) {
      std::string used = *model_type;
      if (used.rfind("prefer_", 0) == 0) used = used.substr(7);
      one["model_type_used"] = used;
    }
    translations.push_back(std::move(one));
  }
  return JsonReply(200, Json{{"translations", std::move(translations)}});
}

HttpReply DeeplApi::Languages(const HttpInput& input) {
  auto fields = Fields(input);
  if (auto* reply = std::get_if<HttpReply>(&fields)) return *reply;
  const DeeplFields& f = std::get<DeeplFields>(fields);
  const std::string type = absl::AsciiStrToLower(f.Get("type").value_or("source"));
  if (type != "source" && type != "target") {
    return DeeplErrorReply(400, "Value for 'type' not supported.");
  }
  v1::ListModelsResponse models;
  auto served = ServedLanguages(backend_, OptionsOf(input, f), &models);
  if (auto* reply = std::get_if<HttpReply>(&served)) return *reply;
  const LtLanguageTable& table = std::get<LtLanguageTable>(served);
  Json out = Json::array();
  if (type == "source") {
    for (const LtLanguage& l : table.list()) {
      if (!l.targets.empty())
        out.push_back({{"language", ToDeeplSource(l.code)}, {"name", l.name}});
    }
    return JsonReply(200, out);
  }
  std::set<std::string> targets;
  for (const LtLanguage& l : table.list()) targets.insert(l.targets.begin(), l.targets.end());
  for (const std::string& code : targets) {
    for (const auto& [deepl, name] : ToDeeplTargets(code)) {
      out.push_back({{"language", deepl}, {"name", name}, {"supports_formality", false}});
    }
  }
  return JsonReply(200, out);
}

HttpReply DeeplApi::Usage(const HttpInput& input) {
  auto fields = Fields(input);
  if (auto* reply = std::get_if<HttpReply>(&fields)) return *reply;
  v1::ListModelsResponse models;
  auto served = ServedLanguages(backend_, OptionsOf(input, std::get<DeeplFields>(fields)), &models);
  if (auto* reply = std::get_if<HttpReply>(&served)) return *reply;  // (the key is checked)
  return JsonReply(200,
                   Json{{"character_count", characters_.load()}, {"character_limit", kUnlimited}});
}

HttpReply DeeplApi::GlossaryLanguagePairs(const HttpInput& input) {
  auto fields = Fields(input);
  if (auto* reply = std::get_if<HttpReply>(&fields)) return *reply;
  v1::ListModelsResponse models;
  auto served = ServedLanguages(backend_, OptionsOf(input, std::get<DeeplFields>(fields)), &models);
  if (auto* reply = std::get_if<HttpReply>(&served)) return *reply;
  const LtLanguageTable& table = std::get<LtLanguageTable>(served);
  Json pairs = Json::array();
  for (const LtLanguage& l : table.list()) {
    for (const std::string& t : l.targets) {
      pairs.push_back({{"source_lang", l.code}, {"target_lang", t}});
    }
  }
  return JsonReply(200, Json{{"supported_languages", std::move(pairs)}});
}

HttpReply DeeplApi::Glossaries(const HttpInput& input) {
  auto fields = Fields(input);
  if (auto* reply = std::get_if<HttpReply>(&fields)) return *reply;
  const DeeplFields& f = std::get<DeeplFields>(fields);
  const CallOptions options = OptionsOf(input, f);
  // "", "v2"|"v3", "glossaries", then the id and what of it.
  const std::vector<std::string> parts = absl::StrSplit(input.path, '/');
  if (parts.size() < 3 || parts.size() > 5 || parts[2] != "glossaries") {
    return DeeplErrorReply(404, "Not found");
  }
  const bool v3 = parts[1] == "v3";
  const std::string id = parts.size() > 3 ? parts[3] : "";
  const std::string sub = parts.size() > 4 ? parts[4] : "";
  const std::string& method = input.method;

  if (id.empty()) {
    if (method == "GET") {
      v1::ListGlossariesResponse list;
      if (const grpc::Status s = backend_.ListGlossaries(options, &list); !s.ok()) {
        return GlossaryError(s);
      }
      Json out = Json::array();
      for (const v1::Glossary& g : list.glossaries()) {
        // v2 shows the glossaries it can describe: those of one dictionary.
        if (v3) {
          out.push_back(GlossaryV3(g));
        } else if (g.dictionaries_size() == 1) {
          out.push_back(GlossaryV2(g));
        }
      }
      return JsonReply(200, Json{{"glossaries", std::move(out)}});
    }
    if (method != "POST") return DeeplErrorReply(405, "Method not allowed");
    v1::CreateGlossaryRequest create;
    if (!f.Get("name")) return DeeplErrorReply(400, "Parameter 'name' not specified.");
    create.set_name(*f.Get("name"));
    if (v3) {
      auto dictionaries = ReadDictionaries(f);
      if (auto* e = std::get_if<DeeplError>(&dictionaries)) return ErrorOf(*e);
      for (auto& d : std::get<std::vector<v1::GlossaryDictionary>>(dictionaries)) {
        *create.add_dictionaries() = std::move(d);
      }
    } else {
      auto d = ReadDictionary(f, "");
      if (auto* e = std::get_if<DeeplError>(&d)) return ErrorOf(*e);
      *create.add_dictionaries() = std::get<v1::GlossaryDictionary>(std::move(d));
    }
    v1::Glossary g;
    if (const grpc::Status s = backend_.CreateGlossary(create, options, &g); !s.ok()) {
      return GlossaryError(s);
    }
    return JsonReply(201, v3 ? GlossaryV3(g) : GlossaryV2(g));
  }

  v1::GlossaryRequest which;
  which.set_glossary_id(id);
  if (sub.empty()) {
    if (method == "GET") {
      v1::Glossary g;
      if (const grpc::Status s = backend_.GetGlossary(which, options, &g); !s.ok()) {
        return GlossaryError(s);
      }
      if (v3) return JsonReply(200, GlossaryV3(g));
      if (g.dictionaries_size() != 1) {
        return DeeplErrorReply(400, "This glossary has several dictionaries: use /v3/glossaries");
      }
      return JsonReply(200, GlossaryV2(g));
    }
    if (method == "DELETE") {
      if (const grpc::Status s = backend_.DeleteGlossary(which, options); !s.ok()) {
        return GlossaryError(s);
      }
      return NoContent();
    }
    if (method == "PATCH" && v3) {
      v1::UpdateGlossaryRequest update;
      update.set_glossary_id(id);
      if (auto name = f.Get("name")) update.set_name(*name);
      auto dictionaries = ReadDictionaries(f);
      if (auto* e = std::get_if<DeeplError>(&dictionaries)) return ErrorOf(*e);
      for (auto& d : std::get<std::vector<v1::GlossaryDictionary>>(dictionaries)) {
        *update.add_dictionaries() = std::move(d);
      }
      if (!update.has_name() && update.dictionaries().empty()) {
        return DeeplErrorReply(400, "Parameter 'name' or 'dictionaries' not specified.");
      }
      update.set_mode(v1::UpdateGlossaryRequest::MODE_MERGE);
      v1::Glossary g;
      if (const grpc::Status s = backend_.UpdateGlossary(update, options, &g); !s.ok()) {
        return GlossaryError(s);
      }
      return JsonReply(200, GlossaryV3(g));
    }
    return DeeplErrorReply(405, "Method not allowed");
  }

  if (sub == "entries" && method == "GET") {
    v1::GlossaryEntriesRequest request;
    request.set_glossary_id(id);
    if (v3) {
      if (!f.Get("source_lang") || !f.Get("target_lang")) {
        return DeeplErrorReply(400, "Parameters 'source_lang' and 'target_lang' must be given.");
      }
      request.set_source_language(*f.Get("source_lang"));
      request.set_target_language(*f.Get("target_lang"));
    } else {
      v1::Glossary g;
      if (const grpc::Status s = backend_.GetGlossary(which, options, &g); !s.ok()) {
        return GlossaryError(s);
      }
      request.set_source_language(g.dictionaries(0).source_language());
      request.set_target_language(g.dictionaries(0).target_language());
    }
    v1::GlossaryDictionary d;
    if (const grpc::Status s = backend_.GetGlossaryEntries(request, options, &d); !s.ok()) {
      return GlossaryError(s);
    }
    std::vector<text::Term> entries;
    for (const v1::GlossaryEntry& e : d.entries()) entries.push_back({e.source(), e.target()});
    if (!v3) {
      HttpReply r;
      r.content_type = "text/tab-separated-values";
      r.body = GlossaryEntriesTsv(entries);
      return r;
    }
    return JsonReply(200,
                     Json{{"dictionaries", Json::array({{{"source_lang", d.source_language()},
                                                         {"target_lang", d.target_language()},
                                                         {"entries", GlossaryEntriesTsv(entries)},
                                                         {"entries_format", "tsv"}}})}});
  }
  if (sub == "dictionaries" && v3 && method == "PUT") {
    auto d = ReadDictionary(f, "");
    if (auto* e = std::get_if<DeeplError>(&d)) return ErrorOf(*e);
    v1::UpdateGlossaryRequest update;
    update.set_glossary_id(id);
    update.set_mode(v1::UpdateGlossaryRequest::MODE_REPLACE);
    *update.add_dictionaries() = std::get<v1::GlossaryDictionary>(std::move(d));
    v1::Glossary g;
    if (const grpc::Status s = backend_.UpdateGlossary(update, options, &g); !s.ok()) {
      return GlossaryError(s);
    }
    const std::string source = text::CanonicalLanguage(update.dictionaries(0).source_language());
    const std::string target = text::CanonicalLanguage(update.dictionaries(0).target_language());
    for (const v1::GlossaryDictionary& x : g.dictionaries()) {
      if (x.source_language() == source && x.target_language() == target) {
        return JsonReply(200, DictionaryInfo(x));
      }
    }
    return DeeplErrorReply(500, "Internal error: the dictionary is not in the glossary");
  }
  if (sub == "dictionaries" && v3 && method == "DELETE") {
    v1::GlossaryEntriesRequest request;
    request.set_glossary_id(id);
    request.set_source_language(f.Get("source_lang").value_or(""));
    request.set_target_language(f.Get("target_lang").value_or(""));
    if (const grpc::Status s = backend_.DeleteGlossaryDictionary(request, options); !s.ok()) {
      return GlossaryError(s);
    }
    return NoContent();
  }
  return DeeplErrorReply(404, "Not found");
}

HttpReply DeeplApi::DeeplxTranslate(const HttpInput& input) {
  auto fields = Fields(input);
  const auto error = [](int status, const std::string& message) {
    return JsonReply(status, Json{{"code", status}, {"message", message}});
  };
  if (auto* reply = std::get_if<HttpReply>(&fields)) {
    return error(reply->status, Json::parse(reply->body)["message"].get<std::string>());
  }
  const DeeplFields& f = std::get<DeeplFields>(fields);
  TranslateArgs a;
  if (!f.Get("text") || f.Get("text")->empty()) return error(400, "text is empty");
  a.texts = {*f.Get("text")};
  a.target_lang = f.Get("target_lang").value_or("");
  if (a.target_lang.empty()) return error(400, "target_lang is empty");
  a.source_lang = f.Get("source_lang").value_or("");
  if (absl::AsciiStrToLower(a.source_lang) == "auto") a.source_lang.clear();
  auto done = RunTranslate(backend_, a, OptionsOf(input, f));
  if (auto* reply = std::get_if<HttpReply>(&done)) {
    return error(reply->status, Json::parse(reply->body)["message"].get<std::string>());
  }
  const Translated& t = std::get<Translated>(done);
  return JsonReply(200, Json{{"code", 200},
                             {"id", static_cast<int64_t>(characters_.load())},
                             {"data", t.texts.at(0)},
                             {"alternatives", Json::array()},
                             {"source_lang", ToDeeplSource(t.source)},
                             {"target_lang", absl::AsciiStrToUpper(a.target_lang)},
                             {"method", "transerve"}});
}

}  // namespace transerve::http
