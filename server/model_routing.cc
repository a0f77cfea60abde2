#include "server/model_routing.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace transerve {
namespace {

std::string Pair(const ModelLanguages& l) {
  auto code = [](const std::string& c) { return c.empty() ? std::string("?") : c; };
  constexpr size_t kListed = 12;  // more are counted, so an error stays readable
  if (l.tokens.targets.size() > kListed) {
    return absl::StrCat(code(l.source), "-{", l.tokens.targets.size(), " languages}");
  }
  if (!l.tokens.targets.empty()) {
    return absl::StrCat(code(l.source), "-{", absl::StrJoin(l.targets(), ","), "}");
  }
  return absl::StrCat(code(l.source), "-", code(l.target));
}

std::string Served(const std::vector<RoutableModel>& models) {
  std::vector<std::string> parts;
  for (const auto& m : models) parts.push_back(absl::StrCat(m.name, " (", Pair(m.languages), ")"));
  return absl::StrJoin(parts, ", ");
}

// The caller's text, escaped and cut, so an error never carries a megabyte back.
std::string Shown(const std::string& s) {
  constexpr size_t kShown = 64;
  return absl::StrCat(absl::CHexEscape(s.substr(0, kShown)), s.size() > kShown ? "..." : "");
}

absl::StatusOr<Route> RouteTo(const std::vector<RoutableModel>& models, size_t i,
                              const LanguageRequest& request) {
  const ModelLanguages& l = models[i].languages;
  auto tokens = l.tokens.Resolve(models[i].name, request.source, request.target);
  if (!tokens.ok()) return tokens.status();
  Route route;
  route.model = i;
  route.tokens = *std::move(tokens);
  route.needs_source = l.NeedsSource() && route.tokens.source.empty();
  return route;
}

}  // namespace

absl::StatusOr<Route> RouteRequest(const std::vector<RoutableModel>& models,
                                   const LanguageRequest& request) {
  if (!request.model.empty()) {
    for (size_t i = 0; i < models.size(); ++i) {
      if (models[i].name != request.model) continue;
      const ModelLanguages& l = models[i].languages;
      // A model whose files do not say its languages is taken at the caller's word.
      const bool target_ok =
          request.target.empty() || l.target.empty() || l.Serves("", request.target);
      const bool source_ok = l.source.empty() || l.ServesSource(request.source);
      if (!target_ok || !source_ok) {
        return absl::InvalidArgumentError(
            absl::StrCat("model '", models[i].name, "' translates ", Pair(l), ", not ",
                         request.source.empty() ? "?" : request.source, "-",
                         request.target.empty() ? "?" : request.target));
      }
      return RouteTo(models, i, request);
    }
    return absl::NotFoundError(absl::StrCat("unknown model '", Shown(request.model),
                                            "'; this server serves: ", Served(models)));
  }
  if (request.target.empty()) {
    if (request.source.empty()) return RouteTo(models, 0, request);
    // A named source only: the default model if it reads that language, else the first that does.
    for (size_t i = 0; i < models.size(); ++i) {
      const ModelLanguages& l = models[i].languages;
      if (l.ServesSource(request.source)) return RouteTo(models, i, request);
    }
    return absl::NotFoundError(absl::StrCat("no model translates from '", request.source,
                                            "'; this server serves: ", Served(models)));
  }
  // A bilingual model for the pair first, then a multilingual one.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < models.size(); ++i) {
      const ModelLanguages& l = models[i].languages;
      if ((pass == 0) != l.tokens.targets.empty()) continue;
      if (l.Serves(request.source, request.target)) return RouteTo(models, i, request);
    }
  }
  return absl::NotFoundError(
      absl::StrCat("no model translates ", request.source.empty() ? "" : request.source + " ",
                   "into '", request.target, "'; this server serves: ", Served(models)));
}

absl::StatusOr<PivotRoute> RoutePivot(const std::vector<RoutableModel>& models,
                                      const LanguageRequest& request, const std::string& via) {
  if (!request.model.empty() || request.source.empty() || request.target.empty() || via.empty() ||
      request.source == via || request.target == via) {
    return absl::NotFoundError(
        absl::StrCat("no pivot through '", via, "' for ", request.source, "-", request.target));
  }
  auto first = RouteRequest(models, LanguageRequest{"", request.source, via});
  if (!first.ok()) return first.status();
  auto second = RouteRequest(models, LanguageRequest{"", via, request.target});
  if (!second.ok()) return second.status();
  return PivotRoute{*std::move(first), *std::move(second), via};
}

}  // namespace transerve
