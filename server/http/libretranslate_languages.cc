#include "server/http/libretranslate_languages.h"

#include <algorithm>
#include <set>

#include "text/language_code.h"

namespace transerve::http {
namespace {

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

bool LtLanguageTable::Model::Reads(std::string_view code) const {
  return source == code || (source == "mul" && (sources.empty() || Contains(sources, code)));
}

LtLanguageTable::LtLanguageTable(const v1::ListModelsResponse& response)
    : pivot_(text::CanonicalLanguage(response.pivot_language())) {
  std::set<std::string> codes;
  for (const v1::ModelInfo& info : response.models()) {
    Model m;
    m.source = text::CanonicalLanguage(info.source_language());
    std::vector<std::string> named(info.target_languages().begin(), info.target_languages().end());
    if (named.empty()) named.push_back(info.target_language());
    for (const std::string& t : named) {
      std::string code = text::CanonicalLanguage(t);
      if (!code.empty() && code != "mul" && !Contains(m.targets, code)) m.targets.push_back(code);
    }
    // A model whose languages are unknown cannot be asked for by language.
    if (m.source.empty() || m.targets.empty()) continue;
    for (const std::string& s : info.source_languages()) {
      std::string code = text::CanonicalLanguage(s);
      if (!code.empty() && !Contains(m.sources, code)) m.sources.push_back(code);
    }
    if (m.source != "mul") codes.insert(m.source);
    codes.insert(m.sources.begin(), m.sources.end());
    codes.insert(m.targets.begin(), m.targets.end());
    if (default_target_.empty() || info.is_default()) default_target_ = m.targets.front();
    models_.push_back(std::move(m));
  }
  for (const std::string& code : codes) {
    LtLanguage& l = languages_.emplace_back();
    l.code = code;
    l.name = text::LanguageName(code);
    std::set<std::string> targets;
    auto add_targets_from = [&](std::string_view from) {
      for (const Model& m : models_) {
        if (!m.Reads(from)) continue;
        for (const std::string& t : m.targets) {
          if (t != code) targets.insert(t);
        }
      }
    };
    add_targets_from(code);
    if (!pivot_.empty() && code != pivot_ && ServesDirectly(code, pivot_)) {
      add_targets_from(pivot_);
    }
    l.targets.assign(targets.begin(), targets.end());
  }
}

bool LtLanguageTable::AcceptsSource(std::string_view code) const {
  return Lists(code) || (!code.empty() && ReadsAnyLanguage());
}

bool LtLanguageTable::Lists(std::string_view code) const {
  return !code.empty() && std::any_of(languages_.begin(), languages_.end(),
                                      [&](const LtLanguage& l) { return l.code == code; });
}

bool LtLanguageTable::ServesDirectly(std::string_view source, std::string_view target) const {
  return std::any_of(models_.begin(), models_.end(), [&](const Model& m) {
    return m.Reads(source) && Contains(m.targets, target);
  });
}

bool LtLanguageTable::Serves(std::string_view source, std::string_view target) const {
  if (ServesDirectly(source, target)) return true;
  return !pivot_.empty() && source != pivot_ && target != pivot_ &&
         ServesDirectly(source, pivot_) && ServesDirectly(pivot_, target);
}

bool LtLanguageTable::ReadsAnyLanguage() const {
  return std::any_of(models_.begin(), models_.end(),
                     [](const Model& m) { return m.source == "mul" && m.sources.empty(); });
}

}  // namespace transerve::http
