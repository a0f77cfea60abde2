#include "server/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <sstream>

#include "model/core/logging.h"
#include "server/latency_buckets.h"

namespace transerve {
namespace {

using prometheus::Histogram;

Histogram::BucketBoundaries StepBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
}
Histogram::BucketBoundaries CountBuckets() {
  return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
}
Histogram::BucketBoundaries RatioBuckets() {
  return {0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1};
}

}  // namespace

struct ServerMetrics::Families {
  prometheus::Family<prometheus::Histogram>* batch_sequences;
  prometheus::Family<prometheus::Histogram>* batch_tokens;
  prometheus::Family<prometheus::Histogram>* padding_ratio;
  prometheus::Family<prometheus::Histogram>* encode_seconds;
  prometheus::Family<prometheus::Histogram>* step_seconds;
  prometheus::Family<prometheus::Histogram>* step_rows;
  prometheus::Family<prometheus::Histogram>* queue_wait;
  prometheus::Family<prometheus::Histogram>* first_token;
  prometheus::Family<prometheus::Counter>* source_tokens;
  prometheus::Family<prometheus::Counter>* generated_tokens;
  prometheus::Family<prometheus::Counter>* steps;
  prometheus::Family<prometheus::Counter>* batches;
  prometheus::Family<prometheus::Counter>* preemptions;
  prometheus::Family<prometheus::Gauge>* active_sequences;
  prometheus::Family<prometheus::Gauge>* active_rows;
  prometheus::Family<prometheus::Gauge>* queue_depth;
  prometheus::Family<prometheus::Gauge>* kv_cache_bytes;
  prometheus::Family<prometheus::Gauge>* kv_cache_capacity;
  prometheus::Family<prometheus::Gauge>* model_info;
};

ServerMetrics::ServerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()), families_(std::make_unique<Families>()) {
  auto& r = *registry_;
  requests_ = &prometheus::BuildCounter()
                   .Name("transerve_requests_total")
                   .Help("Finished RPCs by method, gRPC status code and model")
                   .Register(r);
  duration_ = &prometheus::BuildHistogram()
                   .Name("transerve_request_duration_seconds")
                   .Help("RPC latency from arrival to the final status, in seconds")
                   .Register(r);
  Families& f = *families_;
  auto hist = [&](const char* name, const char* help) {
    return &prometheus::BuildHistogram().Name(name).Help(help).Register(r);
  };
  auto counter = [&](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Register(r);
  };
  auto gauge = [&](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(r);
  };
  f.batch_sequences = hist("transerve_batch_sequences", "Sentences admitted per encoder batch");
  f.batch_tokens = hist("transerve_batch_source_tokens", "Source tokens per encoder batch");
  f.padding_ratio =
      hist("transerve_batch_padding_ratio", "Share of padding positions in each encoder batch");
  f.encode_seconds = hist("transerve_encode_duration_seconds",
                          "Duration of one encoder batch, cross-attention keys/values included");
  f.step_seconds = hist("transerve_decode_step_duration_seconds", "Duration of one decoder step");
  f.step_rows = hist("transerve_decode_step_rows", "Decoder rows (hypotheses) per step");
  f.queue_wait = hist("transerve_queue_wait_seconds", "Time a sentence waits before admission");
  f.first_token = hist("transerve_time_to_first_token_seconds",
                       "Time from submission to a sentence's first generated token");
  f.source_tokens =
      counter("transerve_source_tokens_total", "Source tokens accepted (EOS included)");
  f.generated_tokens =
      counter("transerve_generated_tokens_total", "Target tokens generated in final answers");
  f.steps = counter("transerve_decode_steps_total", "Batched decoder steps run");
  f.batches = counter("transerve_batches_total", "Encoder batches admitted");
  f.preemptions = counter("transerve_kv_preemptions_total",
                          "Sentences sent back to the queue because the KV cache was full");
  f.active_sequences = gauge("transerve_active_sequences", "Sentences being decoded");
  f.active_rows = gauge("transerve_active_rows", "Decoder rows (hypotheses) being decoded");
  f.queue_depth = gauge("transerve_queue_depth", "Sentences waiting for admission");
  f.kv_cache_bytes = gauge("transerve_kv_cache_bytes", "KV cache memory in use, in bytes");
  f.kv_cache_capacity = gauge("transerve_kv_cache_capacity_bytes",
                              "KV cache pool size (--kv_cache_mb), in bytes; 0 = unbounded");
  f.model_info =
      gauge("transerve_model_info", "Served models (value 1), with device, dtype and replicas");
}

ServerMetrics::~ServerMetrics() = default;

int ServerMetrics::Expose(const std::string& address) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address);
    exposer_->RegisterCollectable(registry_);
    const auto ports = exposer_->GetListeningPorts();
    return ports.empty() ? -1 : ports.front();
  } catch (const std::exception& e) {
    Log().error("metrics: cannot listen on {}: {}", address, e.what());
    exposer_.reset();
    return -1;
  }
}

std::unique_ptr<ServerMetrics::ModelMetrics> ServerMetrics::AddModel(
    const std::string& model, const std::string& device, const std::string& dtype,
    const std::string& architecture, int64_t kv_cache_capacity_bytes, int replicas) {
  Families& f = *families_;
  const prometheus::Labels l{{"model", model}};
  auto m = std::make_unique<ModelMetrics>();
  m->batch_sequences_ = &f.batch_sequences->Add(l, CountBuckets());
  m->batch_tokens_ = &f.batch_tokens->Add(l, CountBuckets());
  m->padding_ratio_ = &f.padding_ratio->Add(l, RatioBuckets());
  m->encode_seconds_ = &f.encode_seconds->Add(l, StepBuckets());
  m->step_seconds_ = &f.step_seconds->Add(l, StepBuckets());
  m->step_rows_ = &f.step_rows->Add(l, CountBuckets());
  m->queue_wait_ = &f.queue_wait->Add(l, SecondsBuckets());
  m->first_token_ = &f.first_token->Add(l, SecondsBuckets());
  m->source_tokens_ = &f.source_tokens->Add(l);
  m->generated_tokens_ = &f.generated_tokens->Add(l);
  m->steps_ = &f.steps->Add(l);
  m->batches_ = &f.batches->Add(l);
  m->preemptions_ = &f.preemptions->Add(l);
  m->active_sequences_ = &f.active_sequences->Add(l);
  m->active_rows_ = &f.active_rows->Add(l);
  m->queue_depth_ = &f.queue_depth->Add(l);
  m->kv_cache_bytes_ = &f.kv_cache_bytes->Add(l);
  f.kv_cache_capacity->Add(l).Set(static_cast<double>(kv_cache_capacity_bytes));
  f.model_info
      ->Add({{"model", model},
             {"device", device},
             {"dtype", dtype},
             {"architecture", architecture},
             {"replicas", std::to_string(replicas)}})
      .Set(1);
  return m;
}

void ServerMetrics::RecordRequest(const std::string& method, const std::string& code,
                                  const std::string& model, const std::string& protocol,
                                  double seconds) {
  requests_->Add({{"method", method}, {"code", code}, {"model", model}, {"protocol", protocol}})
      .Increment();
  duration_->Add({{"method", method}, {"model", model}, {"protocol", protocol}}, SecondsBuckets())
      .Observe(seconds);
}

std::map<std::string, int64_t> ServerMetrics::TranslationsByCode() const {
  std::map<std::string, int64_t> counts;
  for (const prometheus::MetricFamily& family : requests_->Collect()) {
    for (const prometheus::ClientMetric& metric : family.metric) {
      std::string method, code;
      for (const prometheus::ClientMetric::Label& label : metric.label) {
        if (label.name == "method") method = label.value;
        if (label.name == "code") code = label.value;
      }
      if (method == "Translate" || method == "TranslateStream") {
        counts[code] += static_cast<int64_t>(metric.counter.value);
      }
    }
  }
  return counts;
}

std::string ServerMetrics::Text() const {
  prometheus::TextSerializer serializer;
  std::ostringstream out;
  serializer.Serialize(out, registry_->Collect());
  return out.str();
}

void ServerMetrics::ModelMetrics::OnBatch(int sequences, int source_tokens, double padding_ratio,
                                          double seconds) {
  batch_sequences_->Observe(sequences);
  encode_seconds_->Observe(seconds);
  batch_tokens_->Observe(source_tokens);
  padding_ratio_->Observe(padding_ratio);
}
void ServerMetrics::ModelMetrics::OnStep(int rows, double seconds) {
  step_rows_->Observe(rows);
  step_seconds_->Observe(seconds);
}
void ServerMetrics::ModelMetrics::OnQueueWait(double seconds) { queue_wait_->Observe(seconds); }
void ServerMetrics::ModelMetrics::OnFirstToken(double seconds) { first_token_->Observe(seconds); }

void ServerMetrics::ModelMetrics::AddTokens(int64_t source_tokens, int64_t generated_tokens) {
  source_tokens_->Increment(static_cast<double>(source_tokens));
  generated_tokens_->Increment(static_cast<double>(generated_tokens));
}

void ServerMetrics::ModelMetrics::SetStats(const Scheduler::Stats& s) {
  absl::MutexLock lock(&stats_mu_);
  active_sequences_->Set(static_cast<double>(s.active_sequences));
  active_rows_->Set(static_cast<double>(s.active_rows));
  queue_depth_->Set(static_cast<double>(s.queued));
  kv_cache_bytes_->Set(static_cast<double>(s.kv_cache_bytes));
  // Steps and batches are cumulative in the scheduler: advance the counters by the difference.
  const double steps = static_cast<double>(s.steps);
  const double batches = static_cast<double>(s.batches_admitted);
  if (steps > last_steps_) steps_->Increment(steps - last_steps_);
  if (batches > last_batches_) batches_->Increment(batches - last_batches_);
  const double preemptions = static_cast<double>(s.preemptions);
  if (preemptions > last_preemptions_) preemptions_->Increment(preemptions - last_preemptions_);
  last_preemptions_ = preemptions;
  last_steps_ = steps;
  last_batches_ = batches;
}

}  // namespace transerve
