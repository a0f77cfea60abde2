// The languages a server offers, as LibreTranslate lists them (/languages) and checks requests
// against them, built from ListModels: each model translates its source language into its
// target languages; a model reading "mul" (many languages) translates from every listed one;
// a pair no model translates is served through the server's pivot language where one model
// translates into it and another out of it (as Argos Translate lists and pivots such pairs).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "transerve/v1/translator.pb.h"

namespace transerve::http {

struct LtLanguage {
  std::string code;                  // canonical (text::CanonicalLanguage)
  std::string name;                  // in English (text::LanguageName)
  std::vector<std::string> targets;  // sorted; never the language itself
};

class LtLanguageTable {
 public:
  explicit LtLanguageTable(const v1::ListModelsResponse& models);

  // Every language some model reads or writes, by code.
  const std::vector<LtLanguage>& list() const { return languages_; }
  // Whether `code` (canonical) is listed, which is LibreTranslate's test of a target.
  bool Lists(std::string_view code) const;
  // Whether `code` is listed or some model reads any language: LibreTranslate's test of a source.
  bool AcceptsSource(std::string_view code) const;
  // Whether some model, or two through the pivot language, translates `source` into `target`
  // (canonical codes).
  bool Serves(std::string_view source, std::string_view target) const;
  // Whether some model reads "mul": then a detector need not be restricted.
  bool ReadsAnyLanguage() const;
  // The default model's first target ("" when there is none).
  const std::string& default_target() const { return default_target_; }

 private:
  struct Model {
    std::string source;                // canonical, "mul" or ""
    std::vector<std::string> sources;  // with "mul": the only ones it reads, when it says
    std::vector<std::string> targets;
    bool Reads(std::string_view code) const;
  };
  bool ServesDirectly(std::string_view source, std::string_view target) const;

  std::vector<Model> models_;
  std::string pivot_;  // canonical; "" = none
  std::vector<LtLanguage> languages_;
  std::string default_target_;
};

}  // namespace transerve::http
