// The step-level API as the scheduler drives it, for tests: one encoder batch, a search per
// source, and the searches Translator::Step has still to advance.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "model/translator/translator.h"

namespace transerve::testing {

struct StartedSearches {
  std::vector<std::unique_ptr<SentenceSearch>> searches;  // in source order
  std::vector<SentenceSearch*> active;                    // not done yet: what Step takes
  void DropFinished() {
    std::erase_if(active, [](SentenceSearch* s) { return s->done(); });
  }
};

inline absl::StatusOr<StartedSearches> StartSearches(Translator& translator,
                                                     std::span<const std::vector<int32_t>> sources,
                                                     const DecodingOptions& options) {
  auto encoded = translator.Encode(sources);
  if (!encoded.ok()) return encoded.status();
  StartedSearches started;
  for (auto& source : *encoded) {
    started.searches.push_back(translator.StartSearch(std::move(source), options));
    started.active.push_back(started.searches.back().get());
  }
  return started;
}

}  // namespace transerve::testing
