#include "server/http/deepl_request.h"

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/http/libretranslate_request.h"
#include "text/language_code.h"

namespace transerve::http {
namespace {

using Json = nlohmann::json;

// A JSON value as a field's text: a string as it is, true/false as "1"/"0", anything else
// (numbers, objects) as its JSON text.
std::string Text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
  return v.dump();
}

// The rest of the value at `pos` of a CSV line (RFC 4180: a quoted field may hold commas and
// doubled quotes); `pos` moves past the field and its comma. False for a broken quote.
bool NextCsvField(const std::string& line, size_t* pos, std::string* field) {
  field->clear();
  size_t i = *pos;
  if (i < line.size() && line[i] == '"') {
    ++i;
    while (true) {
      if (i >= line.size()) return false;
      if (line[i] == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          field->push_back('"');
          i += 2;
          continue;
        }
        ++i;
        break;
      }
      field->push_back(line[i++]);
    }
    if (i < line.size() && line[i] != ',') return false;
  } else {
    while (i < line.size() && line[i] != ',') field->push_back(line[i++]);
  }
  *pos = i < line.size() ? i + 1 : std::string::npos;
  return true;
}

// The lines of `text` (LF or CRLF); a CSV quoted field may span lines.
std::vector<std::string> Lines(const std::string& text, bool csv) {
  std::vector<std::string> lines;
  std::string line;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (csv && c == '"') quoted = !quoted;
    if (c == '\n' && !quoted) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      lines.push_back(std::move(line));
      line.clear();
      continue;
    }
    line.push_back(c);
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

std::string EnglishName(const std::string& code) { return text::LanguageName(code); }

}  // namespace

std::variant<DeeplFields, DeeplError> DeeplFields::Read(const HttpInput& input) {
  DeeplFields f;
  // Query parameters count too (DeepL reads GET parameters and form fields alike).
  for (const auto& [name, value] : input.params) f.fields_[name].push_back(value);
  if (!IsJsonContentType(input.content_type)) return f;
  const Json body = Json::parse(input.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) {
    return DeeplError{400, "The request body is not a JSON object."};
  }
  for (const auto& [name, value] : body.items()) {
    if (value.is_null()) {
      f.fields_.erase(name);
      continue;
    }
    std::vector<std::string>& out = f.fields_[name];
    out.clear();
    if (value.is_array()) {
      for (const Json& v : value) out.push_back(Text(v));
    } else {
      out.push_back(Text(value));
    }
  }
  return f;
}

std::optional<std::string> DeeplFields::Get(const std::string& name) const {
  const auto it = fields_.find(name);
  if (it == fields_.end() || it->second.empty()) return std::nullopt;
  return it->second.front();
}

std::vector<std::string> DeeplFields::GetAll(const std::string& name) const {
  const auto it = fields_.find(name);
  return it == fields_.end() ? std::vector<std::string>() : it->second;
}

std::vector<std::string> DeeplFields::GetList(const std::string& name) const {
  std::vector<std::string> out;
  for (const std::string& value : GetAll(name)) {
    size_t start = 0;
    while (start <= value.size()) {
      const size_t comma = std::min(value.find(',', start), value.size());
      std::string item(absl::StripAsciiWhitespace(value.substr(start, comma - start)));
      if (!item.empty()) out.push_back(std::move(item));
      start = comma + 1;
    }
  }
  return out;
}

std::string DeeplAuthKey(const HttpInput& input, const DeeplFields& fields) {
  const absl::string_view h = absl::StripAsciiWhitespace(input.authorization);
  const std::string scheme = "deepl-auth-key ";
  if (h.size() > scheme.size() && absl::AsciiStrToLower(h.substr(0, scheme.size())) == scheme) {
    return std::string(absl::StripAsciiWhitespace(h.substr(scheme.size())));
  }
  if (std::string bearer = BearerToken(input.authorization); !bearer.empty()) return bearer;
  return fields.Get("auth_key").value_or("");
}

std::string FromDeeplLanguage(const std::string& code) { return text::CanonicalLanguage(code); }

std::string ToDeeplSource(const std::string& canonical) { return absl::AsciiStrToUpper(canonical); }

std::vector<std::pair<std::string, std::string>> ToDeeplTargets(const std::string& canonical) {
  const std::string name = EnglishName(canonical);
  if (canonical == "en") return {{"EN-GB", "English (British)"}, {"EN-US", "English (American)"}};
  if (canonical == "pt") {
    return {{"PT-BR", "Portuguese (Brazilian)"}, {"PT-PT", "Portuguese (European)"}};
  }
  if (canonical == "zh") return {{"ZH-HANS", "Chinese (simplified)"}};
  return {{absl::AsciiStrToUpper(canonical), name}};
}

std::variant<std::vector<text::Term>, DeeplError> ParseGlossaryEntries(const std::string& entries,
                                                                       const std::string& format) {
  const std::string f = absl::AsciiStrToLower(format.empty() ? "tsv" : format);
  if (f != "tsv" && f != "csv") {
    return DeeplError{400, "Value for 'entries_format' not supported."};
  }
  std::vector<text::Term> out;
  const std::vector<std::string> lines = Lines(entries, f == "csv");
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::string& line = lines[n];
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    const auto bad = [&](const char* why) {
      return DeeplError{400,
                        absl::StrCat("Invalid glossary entries provided: line ", n + 1, " ", why)};
    };
    if (f == "tsv") {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos || line.find('\t', tab + 1) != std::string::npos) {
        return bad("is not a source and a target separated by one tab");
      }
      out.push_back({line.substr(0, tab), line.substr(tab + 1)});
      continue;
    }
    std::vector<std::string> fields;
    size_t pos = 0;
    std::string field;
    while (pos != std::string::npos) {
      if (!NextCsvField(line, &pos, &field)) return bad("has a broken quoted field");
      fields.push_back(field);
    }
    if (fields.size() != 2 && fields.size() != 4) {
      return bad("does not hold 2 fields (source,target) or 4 (with their languages)");
    }
    out.push_back({fields[0], fields[1]});
  }
  if (out.empty()) return DeeplError{400, "Invalid glossary entries provided: there are none"};
  return out;
}

std::string GlossaryEntriesTsv(const std::vector<text::Term>& entries) {
  std::string out;
  for (const text::Term& t : entries) absl::StrAppend(&out, t.source, "\t", t.target, "\n");
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace transerve::http
