// One version of a model as served: its translator, the scheduler that owns it, its metrics and
// what ListModels says about it, built from a model directory by LoadServedModel. The model
// repository (model_repository.h) holds these; a call holds one through a ModelLease.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/translator/translator.h"
#include "server/metrics.h"
#include "server/model_languages.h"
#include "server/replica_set.h"
#include "transerve/v1/translator.pb.h"

namespace transerve {

// The schedulers are declared after the translator and their observer: destroyed first.
struct ServedModel {
  std::string name;
  std::string dir;
  int64_t version = 0;  // 1 for a model's first load; a reload adds one
  // The first replica's translator: the text methods (tokenizer, detokenizer, options) of
  // every replica.
  std::unique_ptr<Translator> translator;
  std::unique_ptr<ServerMetrics::ModelMetrics> metrics;  // observes the schedulers: outlives them
  std::unique_ptr<ReplicaSet> scheduler;  // the replicas' schedulers, fed through one Submit
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
  int64_t kv_cache_bytes = 0;  // per replica
  // Engine instances per model (ReplicasFor: 0 = the server's choice), and per model name
  // over it.
  int replicas = 0;
  std::map<std::string, int> model_replicas;
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

// Bytes a loaded model holds for good: its weights (each storage once, shared by the replicas)
// and each replica's KV cache bound when it has one.
int64_t ResidentBytesOf(const Translator& translator, int64_t kv_cache_bytes, int replicas = 1);

}  // namespace transerve
