// One version of a model as served: its translator, the scheduler that owns it, its metrics and
// what ListModels says about it, built from a model directory by LoadServedModel. The model
// repository (model_repository.h) holds these; a call holds one through a ModelLease.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/translator/translator.h"
#include "server/metrics.h"
#include "server/model_languages.h"
#include "server/scheduler.h"
#include "transerve/v1/translator.pb.h"

namespace transerve {

// The scheduler is declared after the translator and its observer: destroyed first.
struct ServedModel {
  std::string name;
  std::string dir;
  int64_t version = 0;  // 1 for a model's first load; a reload adds one
  std::unique_ptr<Translator> translator;
  std::unique_ptr<ServerMetrics::ModelMetrics> metrics;  // observes the scheduler: outlives it
  std::unique_ptr<Scheduler> scheduler;
  ModelLanguages languages;
  v1::ModelInfo info;  // is_default is set by whoever lists it
  int64_t resident_bytes = 0;
  bool pinned = false;   // a --model_dir model
  int leases = 0;        // calls holding it; guarded by its repository's lock
  bool leaving = false;  // no longer serving: freed once `leases` is 0 (same lock)
};

// How every model of a server is loaded.
struct ModelLoadSettings {
  std::string device = "auto";
  std::string dtype = "auto";
  std::string cpu_isa;  // TranslatorOptions::cpu_isa
  int num_threads = 0;
  int64_t kv_cache_bytes = 0;
  int max_source_tokens = 0;
  bool warmup = true;
  SchedulerOptions scheduler;
};

// Loads `dir` as model `name` (`pair`: the operator's "SRC-TGT", "" when not given), warms it up
// with one sentence and starts its scheduler. Errors name the model and the directory.
absl::StatusOr<std::unique_ptr<ServedModel>> LoadServedModel(const std::string& name,
                                                             const std::string& dir,
                                                             const std::string& pair,
                                                             const ModelLoadSettings& settings,
                                                             ServerMetrics& metrics);

// "marian transformer 6+6 layers, d_model 512, 8 heads, ffn 2048, vocab 58101".
std::string ArchitectureOf(const MarianConfig& config);

// Bytes a loaded translator holds for good: its weights (each storage once) and its KV cache's
// bound when it has one.
int64_t ResidentBytesOf(const Translator& translator, int64_t kv_cache_bytes);

}  // namespace transerve
