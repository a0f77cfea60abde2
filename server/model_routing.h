// Which served model answers a request: the one it names, or the one that translates the
// language pair it names (source_language "auto": the detected language). Pure: unit-tested
// over a list of model descriptions, without a server.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/model_languages.h"

namespace transerve {

struct RoutableModel {
  std::string name;
  ModelLanguages languages;
};

struct LanguageRequest {
  std::string model;   // as asked; "" = by languages, or the default
  std::string source;  // canonical; "" = any
  std::string target;  // canonical; "" = the model's own
};

struct Route {
  size_t model = 0;  // index into the models
  // How the request's languages reach the model (tokens.target: ">>deu<<" before every segment,
  // or a forced code; "" for a bilingual model).
  LanguageTokens tokens;
  // The model needs a source language the request did not name (ModelLanguages::NeedsSource):
  // the caller detects one and routes again with it.
  bool needs_source = false;
};

// NOT_FOUND: no model of that name, or none for the pair (the message lists what is served);
// INVALID_ARGUMENT: the named model does not serve the named pair. With no model and no target
// language, the first (default) model, unless a source language is named that it does not
// translate from and another model does. `models` must not be empty. INVALID_ARGUMENT: a model
// that forces the target's token is asked for no target language.
absl::StatusOr<Route> RouteRequest(const std::vector<RoutableModel>& models,
                                   const LanguageRequest& request);

// A translation through a third language: source -> language by the first model, language ->
// target by the second.
struct PivotRoute {
  Route first;
  Route second;
  std::string language;  // canonical
};

// For a pair no model translates: the pair through `via` (canonical, such as "en"), each leg
// routed as RouteRequest routes a pair. NOT_FOUND, naming the leg no model serves, also when
// the request names a model or lacks its source or target, or either of them is `via`.
absl::StatusOr<PivotRoute> RoutePivot(const std::vector<RoutableModel>& models,
                                      const LanguageRequest& request, const std::string& via);

}  // namespace transerve
