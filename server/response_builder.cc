#include "server/response_builder.h"

#include <algorithm>
#include <string>

namespace transerve {

void FillTranslation(const Translator& t, const std::vector<int32_t>& source_ids,
                     const SearchResult& r, bool scores, int num_hypotheses, v1::Translation* out,
                     int64_t* generated_tokens) {
  if (r.hypotheses.empty()) return;
  auto fill = [&](const Hypothesis& h, auto* msg) {
    msg->set_text(t.Detokenize(h.ids));
    if (scores) {
      msg->set_score(h.score);
      for (int32_t id : h.ids) {
        msg->add_token_ids(id);
        msg->add_tokens(std::string(t.tokenizer().TargetIdToPiece(id)));
      }
    }
  };
  const Hypothesis& best = r.hypotheses[0];
  fill(best, out);
  out->set_source_token_count(static_cast<int32_t>(source_ids.size()));
  out->set_target_token_count(static_cast<int32_t>(best.ids.size()));
  *generated_tokens += static_cast<int64_t>(best.ids.size());
  if (!best.alignment.empty()) {
    v1::Alignment* a = out->mutable_alignment();
    a->set_target_length(static_cast<int32_t>(best.ids.size()));
    a->set_source_length(static_cast<int32_t>(best.alignment.size() / best.ids.size()));
    a->mutable_weights()->Add(best.alignment.begin(), best.alignment.end());
    for (int32_t id : source_ids) {
      a->add_source_tokens(std::string(t.tokenizer().SourceIdToPiece(id)));
    }
    for (int32_t id : best.ids) {
      a->add_target_tokens(std::string(t.tokenizer().TargetIdToPiece(id)));
    }
  }
  if (num_hypotheses > 1) {
    const size_t n = std::min<size_t>(num_hypotheses, r.hypotheses.size());
    for (size_t i = 0; i < n; ++i) fill(r.hypotheses[i], out->add_hypotheses());
  }
}

}  // namespace transerve
