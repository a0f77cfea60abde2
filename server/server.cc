// The server's lifecycle: listening, loading the models, health, the gauges' refresh and the
// drain. The calls themselves are served by translator_service.h.
#include "server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "model/core/logging.h"
#include "server/admin_service.h"
#include "server/credentials.h"
#include "server/glossaries/glossary_service.h"
#include "server/http/grpc_bridge.h"
#include "server/http/http_server.h"
#include "server/service_context.h"
#include "server/translator_service.h"

namespace transerve {
namespace {

constexpr char kServiceName[] = "transerve.v1.Translator";

std::string ModelName(const std::string& dir) {
  std::filesystem::path p(dir);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

struct TranserveServer::Impl {
  explicit Impl(const ServerConfig& config) : context(config) {}

  ServiceContext context;  // what the calls share: config, models, metrics, calls in flight
  std::atomic<bool> draining{false};
  absl::Mutex drain_mu;
  bool drain_started ABSL_GUARDED_BY(drain_mu) = false;
  absl::Status drain_result ABSL_GUARDED_BY(drain_mu);  // once the drain is over
  // Health is SERVING once the models are loaded, until a drain starts or a model's device is
  // lost: then NOT_SERVING for good, so that probes move traffic away or restart the process.
  absl::Mutex health_mu;
  bool device_lost ABSL_GUARDED_BY(health_mu) = false;
  std::unique_ptr<grpc::Service> service;  // declared first: outlives the server
  std::unique_ptr<grpc::Service> admin;
  std::unique_ptr<grpc::Service> glossaries;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<http::HttpFrontEnd> http;  // after the server: stopped and destroyed first
  int port = 0;
  int metrics_port = -1;
  std::thread stats_thread;
  std::atomic<bool> stop_stats{false};

  // What gRPC health and the HTTP front end's /readyz say.
  bool Serving() {
    absl::MutexLock lock(&health_mu);
    return context.ready.load() && !draining.load() && !device_lost;
  }
  void UpdateHealth() {
    absl::MutexLock lock(&health_mu);
    const bool serving = context.ready.load() && !draining.load() && !device_lost;
    auto* health = server->GetHealthCheckService();
    health->SetServingStatus("", serving);
    health->SetServingStatus(kServiceName, serving);
  }
  void RefreshGauges() {
    if (!context.ready.load()) return;
    std::string lost_model;
    absl::Status lost;
    context.repository->ForEachServing([&](ServedModel& m) {
      m.metrics->SetStats(m.scheduler->stats());
      if (absl::Status failure = m.scheduler->failure(); !failure.ok() && lost.ok()) {
        lost_model = m.name;
        lost = std::move(failure);
      }
    });
    if (lost.ok()) return;
    bool first = false;
    {
      absl::MutexLock lock(&health_mu);
      first = !device_lost;
      device_lost = true;
    }
    if (first) {
      Log().error("model '{}' can translate nothing more ({}): health is NOT_SERVING", lost_model,
                  std::string(lost.message()));
      UpdateHealth();
      if (context.config.on_device_lost) context.config.on_device_lost(lost);
    }
  }
  // Per model: "transerve.v1.Translator/NAME" is SERVING while NAME is loaded.
  void SetModelHealth(const std::string& model, bool loaded) {
    if (server == nullptr) return;
    server->GetHealthCheckService()->SetServingStatus(absl::StrCat(kServiceName, "/", model),
                                                      loaded);
  }
};

namespace {

// The HTTP front end over the server's own Translator service, in-process.
absl::StatusOr<std::unique_ptr<http::HttpFrontEnd>> StartHttp(const ServerConfig& config,
                                                              TranserveServer::Impl* impl) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(config.max_message_bytes);
  args.SetMaxSendMessageSize(config.max_message_bytes);
  auto backend = std::make_unique<http::GrpcBackend>(
      impl->server->InProcessChannel(args),
      config.auth_tokens.empty() ? std::string() : config.auth_tokens.front(),
      [impl] { return impl->Serving(); });
  http::HttpOptions options;
  options.host = config.http_host;
  options.port = config.http_port;
  options.threads = config.http_threads;
  options.io_timeout_ms = absl::ToInt64Milliseconds(config.http_io_timeout);
  options.max_body_bytes = static_cast<size_t>(config.max_message_bytes);
  options.tls_cert_file = config.tls_cert_file;
  options.tls_key_file = config.tls_key_file;
  options.tls_client_ca_file = config.tls_client_ca_file;
  options.libretranslate.char_limit = config.limits.max_text_chars;
  options.libretranslate.batch_limit = config.limits.max_texts;
  options.libretranslate.max_beam_size = config.limits.max_beam_size;
  return http::HttpFrontEnd::Start(options, std::move(backend), *impl->context.metrics.registry());
}

}  // namespace

TranserveServer::TranserveServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<TranserveServer>> TranserveServer::Start(
    const ServerConfig& config) {
  if (config.model_dirs.empty() && config.model_repository.empty()) {
    return absl::InvalidArgumentError("no --model_dir or --model_repository given");
  }
  auto impl = std::make_unique<Impl>(config);
  // Names are checked before anything listens.
  std::vector<std::string> names;
  for (const auto& dir : config.model_dirs) {
    const std::string name = ModelName(dir);
    if (name.empty()) return absl::InvalidArgumentError(absl::StrCat("bad model_dir '", dir, "'"));
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("two model directories are named '", name, "': names must be unique"));
    }
    names.push_back(name);
  }

  grpc::EnableDefaultHealthCheckService(true);                 // before the builder
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();  // keeps grpc++_reflection linked
  impl->service = MakeTranslatorService(&impl->context);
  impl->admin = MakeAdminService(&impl->context);
  auto glossaries = GlossaryStore::Open(
      config.data_dir.empty() ? ""
                              : (std::filesystem::path(config.data_dir) / "glossaries").string());
  if (!glossaries.ok()) return glossaries.status();
  impl->context.glossaries = *std::move(glossaries);
  impl->glossaries = MakeGlossaryService(&impl->context);
  auto credentials = ServerCredentialsFor(config);
  if (!credentials.ok()) return credentials.status();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.address, *credentials, &impl->port);
  builder.RegisterService(impl->service.get());
  builder.RegisterService(impl->admin.get());
  builder.RegisterService(impl->glossaries.get());
  builder.SetMaxReceiveMessageSize(config.max_message_bytes);
  builder.SetMaxSendMessageSize(config.max_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, config.keepalive_time_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, config.keepalive_timeout_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  // gRPC sets SO_REUSEPORT on Linux by default: a second server would bind this port too and
  // take half the connections. A port in use is an error at start-up.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config.address));
  }
  impl->UpdateHealth();  // NOT_SERVING until the models are loaded
  if (!config.metrics_address.empty()) {
    impl->metrics_port = impl->context.metrics.Expose(config.metrics_address);
    if (impl->metrics_port < 0) {
      impl->server->Shutdown();
      return absl::UnavailableError(
          absl::StrCat("cannot serve metrics on ", config.metrics_address));
    }
  }
  Impl* raw = impl.get();
  if (config.http_port >= 0) {
    auto started = StartHttp(config, raw);
    if (!started.ok()) {
      impl->server->Shutdown();
      return started.status();
    }
    impl->http = *std::move(started);
  }
  impl->stats_thread = std::thread([raw] {
    while (!raw->stop_stats.load()) {
      raw->RefreshGauges();
      absl::SleepFor(absl::Milliseconds(250));
    }
  });
  return std::unique_ptr<TranserveServer>(new TranserveServer(std::move(impl)));
}

absl::Status TranserveServer::LoadModels() {
  Impl& impl = *impl_;
  if (impl.context.ready.load()) return absl::OkStatus();
  const ServerConfig& config = impl.context.config;
  ModelRepositoryOptions options;
  options.root = config.model_repository;
  options.poll_interval = config.repository_poll_interval;
  options.budget.bytes = static_cast<int64_t>(config.model_memory_mb * (1 << 20));
  options.budget.max_models = config.max_loaded_models;
  options.load_threads = config.model_load_threads;
  options.max_room_wait = config.scheduler.max_queue_wait;
  options.default_model = config.default_model;
  options.model_languages = config.model_languages;
  options.load.device = config.device;
  options.load.dtype = config.dtype;
  options.load.cpu_isa = config.cpu_isa;
  options.load.num_threads = config.num_threads;
  options.load.replicas = config.replicas;
  options.load.model_replicas = config.model_replicas;
  options.load.kv_cache_bytes = config.kv_cache_bytes;
  options.load.max_source_tokens = config.limits.max_source_tokens;
  options.load.warmup = config.warmup;
  options.load.scheduler = config.scheduler;
  Impl* raw = &impl;
  auto repository = std::make_unique<ModelRepository>(
      std::move(options), impl.context.metrics,
      [raw](const std::string& model, bool loaded) { raw->SetModelHealth(model, loaded); });
  for (const auto& dir : config.model_dirs) {
    if (auto s = repository->AddPinned(ModelName(dir), dir); !s.ok()) return s;
    raw->SetModelHealth(ModelName(dir), true);
  }
  if (auto s = repository->Start(config.preload); !s.ok()) return s;
  impl.context.repository = std::move(repository);
  impl.context.ready.store(true);
  impl.UpdateHealth();
  return absl::OkStatus();
}

void TranserveServer::ReloadModels() {
  if (impl_->context.ready.load()) impl_->context.repository->ReloadAll();
}

absl::Status TranserveServer::Drain(absl::Duration timeout) {
  Impl& impl = *impl_;
  {
    absl::MutexLock lock(&impl.drain_mu);
    if (impl.drain_started) return impl.drain_result;
    impl.drain_started = true;
  }
  // The time beyond `timeout` (kDrainGrace in all): a decoder step's grace to return once the
  // schedulers stop, then gRPC's shutdown (it cancels what is left), then its Wait.
  constexpr absl::Duration kStepGrace = absl::Seconds(2);
  constexpr absl::Duration kGrpcShutdownAfter = absl::Milliseconds(2500);
  constexpr absl::Duration kGrpcWaitAfter = absl::Milliseconds(3500);
  constexpr absl::Duration kAcceptSettle = absl::Milliseconds(100);
  static_assert(kGrpcWaitAfter < kDrainGrace);
  const absl::Time deadline = absl::Now() + timeout;
  impl.draining.store(true);
  absl::Status result;
  // Health first (watchers and probes learn it), then gRPC's own shutdown at once: it closes the
  // listener and sends GOAWAY, so a load balancer's next call fails to connect or is refused
  // before it reaches us — an error it can retry on another replica — instead of being accepted
  // and answered UNAVAILABLE. Calls already running are left to finish; its deadline comes after
  // the schedulers' (and their step grace) so that every remaining call is answered by them,
  // not cancelled. Its Wait is bounded too: a call that never finishes must not hold the exit.
  // HTTP's listener closes at once too. Its requests in flight call the service in-process, and
  // gRPC's shutdown closes that channel at once (cancelling them): gRPC's shutdown waits for
  // them first (within the deadline), its listener open meanwhile.
  http::HttpFrontEnd* front = impl.http.get();
  if (front != nullptr) front->StopAccepting();
  std::thread grpc_stop;
  auto grpc_stopped = std::make_shared<absl::Notification>();
  auto grpc_closing = std::make_shared<absl::Notification>();
  if (impl.server) {
    impl.UpdateHealth();
    grpc::Server* server = impl.server.get();
    grpc_stop = std::thread([server, front, grpc_stopped, grpc_closing, deadline] {
      if (front != nullptr) front->AwaitIdle(deadline);
      grpc_closing->Notify();
      server->Shutdown(absl::ToChronoTime(deadline + kGrpcShutdownAfter));
      server->Wait();
      grpc_stopped->Notify();
    });
  }
  std::thread http_stop;
  auto http_stopped = std::make_shared<absl::Notification>();
  if (front != nullptr) {
    http_stop = std::thread([front, http_stopped] {
      front->Stop();
      http_stopped->Notify();
    });
  }
  // Until gRPC's listener closes, calls still arrive: the schedulers must take them. A call
  // gRPC received just before it closed reaches its handler a moment later, so the idle wait
  // starts after a short settle (without it, one such call in thousands was refused by a
  // draining scheduler: answered UNAVAILABLE although accepted).
  if (impl.server) {
    grpc_closing->WaitForNotificationWithDeadline(deadline);
    absl::SleepFor(std::min(kAcceptSettle, std::max(absl::ZeroDuration(), deadline - absl::Now())));
  }
  impl.context.AwaitIdle(deadline);
  // What is still running gets the rest of the time, then UNAVAILABLE. The models stop side by
  // side, so that stuck ones cost one step grace, not one each.
  if (impl.context.ready.load()) {
    const absl::Duration left = std::max(absl::ZeroDuration(), deadline - absl::Now());
    for (const auto& [model, status] : impl.context.repository->Drain(left, kStepGrace)) {
      Log().error("model '{}': the drain found its decoder stuck: {}", model,
                  std::string(status.message()));
      if (result.ok()) {
        result =
            absl::DeadlineExceededError(absl::StrCat("model '", model, "': ", status.message()));
      }
    }
  }
  if (grpc_stop.joinable()) {
    if (grpc_stopped->WaitForNotificationWithDeadline(deadline + kGrpcWaitAfter)) {
      grpc_stop.join();
    } else {
      Log().error("gRPC calls still running {} after the drain deadline: giving up on them",
                  absl::FormatDuration(absl::Now() - deadline));
      grpc_stop.detach();  // it uses the server, which is then leaked with the rest
      if (result.ok()) result = absl::DeadlineExceededError("gRPC's shutdown did not finish");
    }
  }
  if (http_stop.joinable()) {
    // Idle keep-alive connections hold it up to their timeout (less than kGrpcWaitAfter).
    if (http_stopped->WaitForNotificationWithDeadline(deadline + kGrpcWaitAfter)) {
      http_stop.join();
    } else {
      Log().error("HTTP requests still running {} after the drain deadline: giving up on them",
                  absl::FormatDuration(absl::Now() - deadline));
      http_stop.detach();
      if (result.ok()) result = absl::DeadlineExceededError("the HTTP front end did not stop");
    }
  }
  impl.stop_stats.store(true);
  if (impl.stats_thread.joinable()) impl.stats_thread.join();
  absl::MutexLock lock(&impl.drain_mu);
  impl.drain_result = result;
  return result;
}

TranserveServer::~TranserveServer() {
  if (!Drain(absl::ZeroDuration()).ok()) {
    // A stuck decoder or gRPC thread still uses the models and the server: destroying them
    // would pull them from under it. The process is about to end anyway.
    static_cast<void>(impl_.release());
  }
  // Schedulers go before their translators (ServedModel member order does this per model).
}

int TranserveServer::port() const { return impl_->port; }
int TranserveServer::metrics_port() const { return impl_->metrics_port; }
int TranserveServer::http_port() const { return impl_->http ? impl_->http->port() : -1; }

std::string TranserveServer::MetricsText() {
  impl_->RefreshGauges();
  return impl_->context.metrics.Text();
}

std::string TranserveServer::AnsweredSummary() const {
  int64_t total = 0;
  std::vector<std::string> parts;
  for (const auto& [code, n] : impl_->context.metrics.TranslationsByCode()) {
    total += n;
    parts.push_back(absl::StrCat(code, "=", n));
  }
  return absl::StrCat("answered=", total, parts.empty() ? "" : " ", absl::StrJoin(parts, " "));
}

std::string TranserveServer::Summary() const {
  const Impl& impl = *impl_;
  std::vector<std::string> models;
  if (impl.context.ready.load()) {
    for (const v1::ModelInfo& m : impl.context.repository->ModelInfos()) {
      models.push_back(m.loaded() ? absl::StrCat(m.name(), "@", m.device()) : m.name());
    }
  }
  const auto& l = impl.context.config.limits;
  const auto& s = impl.context.config.scheduler;
  return absl::StrCat(
      "models=[", absl::StrJoin(models, ","), "] device=", impl.context.config.device,
      " threads=", impl.context.config.num_threads, " port=", impl.port,
      " metrics_port=", impl.metrics_port, " http_port=", impl.http ? impl.http->port() : -1,
      " batching=", s.admission.mode == BatchingMode::kContinuous ? "continuous" : "static",
      " max_batch_sequences=", s.admission.max_batch_sequences,
      " max_batch_tokens=", s.admission.max_batch_tokens, " max_queue=", s.max_queue,
      " max_queue_wait=", absl::FormatDuration(s.max_queue_wait),
      " kv_cache_bytes=", impl.context.config.kv_cache_bytes, " limits: texts=", l.max_texts,
      " chars=", l.max_text_chars, " source_tokens=", l.max_source_tokens,
      " beam=", l.max_beam_size, " max_length=", l.max_length, " tls=",
      impl.context.config.tls_cert_file.empty()        ? "off"
      : impl.context.config.tls_client_ca_file.empty() ? "on"
                                                       : "mutual",
      " auth_tokens=", impl.context.config.auth_tokens.size(),
      " admin_tokens=", impl.context.config.admin_tokens.size(), " model_repository=",
      impl.context.config.model_repository.empty() ? "-" : impl.context.config.model_repository,
      " model_memory_mb=", impl.context.config.model_memory_mb,
      " max_loaded_models=", impl.context.config.max_loaded_models);
}

}  // namespace transerve
