#include "server/models/served_model.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/core/logging.h"
#include "model/core/thread_pool.h"

namespace transerve {
std::string ArchitectureOf(const MarianConfig& c) {
  return absl::StrCat(c.family, " ", c.encoder_layers, "+", c.decoder_layers, " layers, d_model ",
                      c.d_model, ", ", c.encoder_attention_heads, " heads, ffn ", c.encoder_ffn_dim,
                      ", vocab ", c.vocab_size);
}

int64_t ResidentBytesOf(const Translator& translator, int64_t kv_cache_bytes, int replicas) {
  return translator.WeightBytes() + std::max<int64_t>(kv_cache_bytes, 0) * std::max(replicas, 1);
}

absl::StatusOr<std::unique_ptr<ServedModel>> LoadServedModel(const std::string& name,
                                                             const std::string& dir,
                                                             const std::string& pair,
                                                             const ModelLoadSettings& settings,
                                                             ServerMetrics& metrics) {
  auto failed = [&](const absl::Status& s, const char* what) {
    return absl::Status(s.code(),
                        absl::StrCat("model '", name, "' (", dir, "): ", what, s.message()));
  };
  auto m = std::make_unique<ServedModel>();
  m->name = name;
  m->dir = dir;
  TranslatorOptions topts;
  topts.model_dir = dir;
  topts.device = settings.device;
  topts.dtype = settings.dtype;
  topts.cpu_isa = settings.cpu_isa;
  topts.num_threads = settings.num_threads;
  topts.kv_cache_max_bytes = settings.kv_cache_bytes;
  auto translator = Translator::Create(topts);
  if (!translator.ok()) return failed(translator.status(), "");
  m->translator = *std::move(translator);
  if (settings.warmup) {
    DecodingOptions o = m->translator->DefaultOptions();
    o.beam_size = 1;
    o.num_hypotheses = 1;
    o.max_length = std::min(o.max_length, 8);
    o.min_length = 0;
    const std::vector<std::string> texts{"Hello world."};
    if (auto r = m->translator->Translate(texts, o); !r.ok()) {
      return failed(r.status(), "warm-up failed: ");
    }
  }
  auto languages = ReadModelLanguages(dir, pair, m->translator->tokenizer());
  if (!languages.ok()) return failed(languages.status(), "");
  m->languages = *std::move(languages);
  const MarianConfig& c = m->translator->model().config;
  const std::string device(DeviceName(m->translator->device()));
  const std::string arch = ArchitectureOf(c);
  m->info.set_name(name);
  m->info.set_architecture(arch);
  m->info.set_device(device);
  m->info.set_dtype(m->translator->dtype());
  m->info.set_dtype_choice(m->translator->dtype_choice());
  m->info.set_max_source_tokens(static_cast<int32_t>(
      std::min<int64_t>(c.max_position_embeddings, settings.max_source_tokens)));
  m->info.set_source_language(m->languages.source);
  m->info.set_target_language(m->languages.target);
  for (const std::string& t : m->languages.targets()) m->info.add_target_languages(t);
  for (const auto& [source, token] : m->languages.tokens.sources) {
    m->info.add_source_languages(source);
  }
  m->info.set_loaded(true);
  const auto asked = settings.model_replicas.find(name);
  const int replicas =
      ReplicasFor(asked != settings.model_replicas.end() ? asked->second : settings.replicas,
                  m->translator->device(), ThreadPool::Engine().size());
  auto scheduler = ReplicaSet::Create(m->translator.get(), replicas, settings.scheduler);
  if (!scheduler.ok()) return failed(scheduler.status(), "");
  m->info.set_replicas(replicas);
  m->resident_bytes = ResidentBytesOf(*m->translator, settings.kv_cache_bytes, replicas);
  m->metrics = metrics.AddModel(name, device, m->translator->dtype(), arch,
                                settings.kv_cache_bytes * replicas, replicas);
  m->scheduler = *std::move(scheduler);
  m->scheduler->SetObserver(m->metrics.get());
  Log().info(
      "model '{}' loaded from {} on {}: {}, languages {}-{}, {} MB resident, dtype {}, {} "
      "replica{}",
      name, dir, device, arch, m->languages.source.empty() ? "?" : m->languages.source,
      m->languages.target.empty() ? "?" : m->languages.target, m->resident_bytes / (1 << 20),
      m->info.dtype_choice().empty() ? m->translator->dtype() : m->info.dtype_choice(), replicas,
      replicas == 1 ? "" : "s");
  return m;
}

}  // namespace transerve
