// Reading DeepL API requests: the fields of a form (urlencoded or multipart, a name may repeat)
// or of a JSON object body; the key as DeepL takes it; DeepL's language codes; glossary entries
// in its TSV and CSV formats. Parsing only: what the fields mean is deepl_api.cc's.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "server/http/http_exchange.h"
#include "text/term_table.h"

namespace transerve::http {

// An answer of DeepL's shape, {"message": ...}, with its HTTP status.
struct DeeplError {
  int status = 400;
  std::string message;
};

// A request's fields by name. From a form: each value as sent. From JSON: a string as it is,
// true/false as "1"/"0", other values (numbers, objects) as their JSON text, an array as its
// elements so read, null as absent.
class DeeplFields {
 public:
  // 400 for a JSON body that is not an object.
  static std::variant<DeeplFields, DeeplError> Read(const HttpInput& input);

  // The field's value (the first of a repeated one); nullopt when absent.
  std::optional<std::string> Get(const std::string& name) const;
  // Every value of the field (a repeated form field, a JSON array); empty when absent.
  std::vector<std::string> GetAll(const std::string& name) const;
  // A list given as one comma-separated value or as several: ignore_tags and the like.
  std::vector<std::string> GetList(const std::string& name) const;
  bool Has(const std::string& name) const { return fields_.count(name) > 0; }

 private:
  std::map<std::string, std::vector<std::string>> fields_;
};

// The caller's key: "Authorization: DeepL-Auth-Key KEY" (or "Bearer KEY"), else the legacy
// auth_key field; "" when neither.
std::string DeeplAuthKey(const HttpInput& input, const DeeplFields& fields);

// A language code DeepL's way ("DE", "EN-GB", "PT-BR", "ZH-HANS", any case) in the canonical
// form the server routes by ("de", "en", "pt", "zh"); "" when it is not a language code.
std::string FromDeeplLanguage(const std::string& code);
// The canonical code as DeepL writes a source language: upper case ("DE").
std::string ToDeeplSource(const std::string& canonical);
// The codes DeepL lists for a target language: "en" is "EN-GB" and "EN-US", "pt" "PT-BR" and
// "PT-PT", "zh" "ZH-HANS"; others the code in upper case. With their names in English.
std::vector<std::pair<std::string, std::string>> ToDeeplTargets(const std::string& canonical);

// Glossary entries in DeepL's formats: "tsv" (source TAB target per line) or "csv" (source,
// target[,source_lang,target_lang] per line, RFC 4180 quoting). Blank lines are skipped; a line
// that is not an entry is a 400 naming its number. Terms are checked later, by the store.
std::variant<std::vector<text::Term>, DeeplError> ParseGlossaryEntries(const std::string& entries,
                                                                       const std::string& format);
// Entries as DeepL's TSV.
std::string GlossaryEntriesTsv(const std::vector<text::Term>& entries);

}  // namespace transerve::http
