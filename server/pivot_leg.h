// A translation through a third language, where no model translates the pair: each segment goes
// through the first model (source -> pivot language) and, once that is done, its translation
// through the second (pivot language -> target), each leg queued in its own model's scheduler
// like any other sentence. The answer is the second leg's hypotheses with the two legs'
// alignments chained (text::ChainTranslations), so they point from the target's tokens at the
// source's: markup and protected spans go back as they do after one model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/decoding/decoding_options.h"
#include "pipeline/document_segments.h"
#include "server/models/model_repository.h"
#include "server/request_validation.h"
#include "server/scheduler.h"
#include "transerve/v1/translator.pb.h"

namespace transerve {

// The second leg: its model, and how that model's sources and options are made.
struct PivotLeg {
  ModelLease lease;
  ServedModel* model = nullptr;  // lease.get()
  std::string language;          // the language between the legs, canonical ("en")
  SegmentSettings settings;      // its language tokens and token limit; cut, never refused
  DecodingOptions options;       // the request's options over its defaults, its forced token
};

// The second leg of `request` on the leased model, translating `language` into `target`
// (canonical). INVALID_ARGUMENT where the request's options do not suit that model.
absl::StatusOr<PivotLeg> PreparePivotLeg(const v1::TranslateRequest& request,
                                         const RequestLimits& limits, ModelLease lease,
                                         const std::string& language, const std::string& target);

// Turns `job` (a segment's job for `first`, whose text is `model_text`) into the first leg of a
// pivot: its on_done sends the first leg's best translation through `pivot` as a new job, and
// passes on the second leg's result (or the first error of either leg); its on_progress follows
// the second leg. Each leg's tokens are counted in its own model's metrics. `first` and `pivot`
// must outlive the job's answer (the caller's admission holds both).
void MakePivotJob(const ServedModel& first, const PivotLeg& pivot, std::string model_text,
                  SentenceJob* job);

}  // namespace transerve
