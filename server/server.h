// transerve's gRPC server: the transerve.v1.Translator service (callback API, no thread per
// request), grpc.health.v1, reflection and Prometheus metrics over one Scheduler per model.
// Used by transerve-server's main and, in-process, by the integration tests. No gRPC headers
// here, so including this is cheap.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/request_validation.h"
#include "server/scheduler.h"

namespace transerve {

struct ServerConfig {
  std::vector<std::string> model_dirs;  // pinned models; name = directory base name
  // Each subdirectory that holds a model is one, loaded on demand (docs/model-repository.md).
  std::string model_repository;
  absl::Duration repository_poll_interval = absl::Seconds(2);
  std::vector<std::string> preload;  // repository models loaded at start
  double model_memory_mb = 0;        // the repository models' budget; 0 = unbounded
  int max_loaded_models = 0;         // 0 = unbounded
  int model_load_threads = 2;        // repository loads at once, each of another model
  std::string default_model;         // "" = the first --model_dir, else the first by name
  // "SRC-TGT" per model name, over what the model's files say (server/model_languages.h).
  std::map<std::string, std::string> model_languages;
  // Where no model translates a pair: two chained through this language (canonical); "": never.
  std::string pivot_language = "en";
  // Where the server keeps what it is given (glossaries); "": in memory, lost at exit.
  std::string data_dir;
  std::string address = "0.0.0.0:50051";         // port 0 picks a free port
  std::string metrics_address = "0.0.0.0:9464";  // empty: no HTTP exposer
  // The HTTP front end (server/http): LibreTranslate's API, the JSON API, the web page. -1: off;
  // 0 picks a free port. It uses the gRPC port's TLS files and tokens.
  int http_port = -1;
  std::string http_host = "0.0.0.0";
  int http_threads = 64;  // HTTP requests served at once (one thread each)
  absl::Duration http_io_timeout = absl::Seconds(10);  // per read / write of a slow client
  std::string device = "auto";
  std::string dtype = "auto";  // auto | float32 | float16 (GPU) | bfloat16 | int8 (CPU)
  std::string cpu_isa;         // TranslatorOptions::cpu_isa
  int num_threads = 0;
  int replicas = 0;                           // per model; 0 = the server's choice (ReplicasFor)
  std::map<std::string, int> model_replicas;  // per model name, over `replicas`
  int64_t kv_cache_bytes = 0;                 // per replica; 0 = unbounded
  SchedulerOptions scheduler;
  RequestLimits limits;
  int max_message_bytes = 16 << 20;
  int keepalive_time_ms = 60000;
  int keepalive_timeout_ms = 20000;
  bool warmup = true;
  // PEM files; both set: TLS instead of plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  // PEM roots; set (with TLS): clients must present a certificate they sign (mutual TLS).
  std::string tls_client_ca_file;
  // Non-empty: Translator calls must send the metadata "authorization: Bearer <token>" with one
  // of these, else UNAUTHENTICATED (health and reflection stay open).
  std::vector<std::string> auth_tokens;
  // transerve.v1.Admin's tokens, presented the same way; none: Admin is PERMISSION_DENIED.
  std::vector<std::string> admin_tokens;
  // Called once, from a server thread, when a model's device is lost for good (a CUDA "sticky"
  // error; health has just turned NOT_SERVING). transerve-server then drains and exits 1, for
  // its supervisor to restart it: only a new process can use the GPU again.
  std::function<void(const absl::Status&)> on_device_lost;
};

class TranserveServer {
 public:
  // Listens (health NOT_SERVING; Translate answers UNAVAILABLE until LoadModels is done).
  static absl::StatusOr<std::unique_ptr<TranserveServer>> Start(const ServerConfig& config);
  ~TranserveServer();  // Drain(0) if not drained yet

  // Loads and warms up the --model_dir and --preload models, starts their schedulers, finds the
  // repository's, then health goes SERVING.
  absl::Status LoadModels();
  // SIGHUP: rescan the model repository and reload its loaded models.
  void ReloadModels();

  // Health NOT_SERVING, then the listener closes and new calls are refused by gRPC (a load
  // balancer retries them elsewhere); in-flight calls finish within `timeout` (the rest are
  // answered UNAVAILABLE), then the server stops. Returns within `timeout` + kDrainGrace
  // whatever the engine does: OK for a clean stop; otherwise a model's decoder (or a gRPC call)
  // is stuck, every call was still answered UNAVAILABLE, the error (also logged) says where,
  // and the stuck threads still use this server: it is then leaked, not destroyed, by its
  // destructor, and the process should exit. Idempotent (a second call returns the first's
  // result).
  absl::Status Drain(absl::Duration timeout);
  // What Drain may take beyond its timeout: a decoder step's grace, then gRPC's own shutdown.
  static constexpr absl::Duration kDrainGrace = absl::Seconds(4);

  int port() const;
  int metrics_port() const;  // -1 without an exposer
  int http_port() const;     // -1 without the HTTP front end
  // The Prometheus text exposition (gauges refreshed first).
  std::string MetricsText();
  // One line for the start-up log: models, device, threads, limits, ports.
  std::string Summary() const;
  // Translate and TranslateStream calls answered so far, by status: "answered=N OK=n ...".
  std::string AnsweredSummary() const;

  struct Impl;

 private:
  explicit TranserveServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace transerve
