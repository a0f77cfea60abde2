// transerve-server: serves Marian models over gRPC (transerve.v1.Translator), with health,
// reflection and Prometheus metrics. Every flag can also be set by the environment variable
// TRANSERVE_<FLAG NAME IN CAPITALS>; the command line wins over the environment.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "model/core/logging.h"
#include "model/translator/engine_process.h"
#include "server/auth.h"
#include "server/server.h"
#include "text/language_code.h"

ABSL_FLAG(std::vector<std::string>, model_dir, {},
          "Model directory (Hugging Face Marian layout); repeat or give a comma list to serve "
          "several. The name is the directory's base name; the first is the default.");
ABSL_FLAG(std::string, model_repository, "",
          "Directory of models, one per subdirectory (named by it), loaded on demand and "
          "unloaded under --model_memory_mb / --max_loaded_models; rescanned for new, removed "
          "and changed models");
ABSL_FLAG(absl::Duration, repository_poll_interval, absl::Seconds(2),
          "How often --model_repository is rescanned");
ABSL_FLAG(std::vector<std::string>, preload, {}, "Repository models to load at start (comma list)");
ABSL_FLAG(double, model_memory_mb, 0,
          "Memory budget of the repository's loaded models, in MiB; 0 = unbounded");
ABSL_FLAG(int, max_loaded_models, 0, "Most repository models loaded at once; 0 = unbounded");
ABSL_FLAG(int, model_load_threads, 0,
          "Repository models loaded side by side (one load per model at a time), their bytes "
          "reserved in --model_memory_mb while they load; 1 = one load at a time; 0 = one per "
          "two cores (a load keeps about two cores busy)");
ABSL_FLAG(std::string, default_model, "",
          "The model of requests that name neither a model nor languages (default: the first "
          "--model_dir, else the repository's first by name)");
ABSL_FLAG(std::string, admin_tokens_file, "",
          "File of admin bearer tokens (one per line): transerve.v1.Admin needs one of them");
ABSL_FLAG(std::string, admin_token, "",
          "If set, transerve.v1.Admin calls need 'authorization: Bearer TOKEN' (without an "
          "admin token the Admin service is off); prefer TRANSERVE_ADMIN_TOKEN");
ABSL_FLAG(std::string, host, "0.0.0.0", "Address to listen on");
ABSL_FLAG(std::string, metrics_host, "",
          "Address of the /metrics port; empty = --host (e.g. 127.0.0.1 keeps it private)");
ABSL_FLAG(int, port, 50051, "gRPC port (0 picks a free one)");
ABSL_FLAG(int, metrics_port, 9464, "Prometheus /metrics port (0 picks a free one, -1 disables)");
ABSL_FLAG(int, http_port, 5000,
          "HTTP port: LibreTranslate's API, the JSON API (/v1/...), the web page at / "
          "(LibreTranslate's default port; 0 picks a free one, -1 disables)");
ABSL_FLAG(std::string, http_host, "", "Address for the HTTP port (default: --host)");
ABSL_FLAG(int, http_threads, 64, "HTTP requests served at once (one thread each)");
ABSL_FLAG(absl::Duration, http_io_timeout, absl::Seconds(10),
          "A slow HTTP client's limit: each read of its request and each write of its answer "
          "must progress within this, or the connection is closed");
ABSL_FLAG(std::string, device, "auto", "auto, cpu or cuda");
ABSL_FLAG(std::string, dtype, "auto",
          "Weights: auto (float16 on a GPU; on the CPU int8 when the model passes its int8 "
          "check at load, else bfloat16 or float32: docs/engine.md), float32, float16 (GPU), "
          "bfloat16 or int8 (CPU)");
ABSL_FLAG(std::string, cpu_isa, "",
          "Lower the CPU kernels' instruction-set level: avx2, avx512, avx512_vnni or "
          "avx512_bf16 (empty: the highest this CPU has)");
ABSL_FLAG(std::string, batching, "continuous", "continuous or static");
ABSL_FLAG(int, max_batch_sequences, 64, "Most sentences decoded together");
ABSL_FLAG(int, admission_group, transerve::AdmissionPolicy{}.admission_group,
          "Continuous batching: sentences admitted together while others decode");
ABSL_FLAG(int, max_admission_wait_steps, transerve::AdmissionPolicy{}.max_admission_wait_steps,
          "Continuous batching: decoder steps a queued sentence may wait for a group");
ABSL_FLAG(int, max_batch_tokens, 8192, "Most source tokens admitted in one encoder batch");
ABSL_FLAG(int, max_queue, 8192, "Most queued sentences per model; beyond: RESOURCE_EXHAUSTED");
ABSL_FLAG(absl::Duration, max_queue_wait, absl::Seconds(10),
          "Queue time budget: a sentence not admitted within it is answered RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, kv_cache_mb, 0, "KV cache pool per model, in MiB; 0 = unbounded");
ABSL_FLAG(int, max_texts_per_request, 64, "Most texts in one request");
ABSL_FLAG(int, max_text_chars, transerve::RequestLimits{}.max_text_chars,
          "Most Unicode characters per text (a document)");
ABSL_FLAG(int, max_sentences_per_request, transerve::RequestLimits{}.max_sentences,
          "Most sentences (segments) per request, all its texts together");
ABSL_FLAG(int, max_source_tokens, 512,
          "Most source tokens per sentence (EOS included); longer sentences are cut at safe "
          "points (with sentence splitting off: rejected, or truncated with options.truncate)");
ABSL_FLAG(std::vector<std::string>, model_languages, {},
          "NAME=SRC-TGT,...: a model's language pair, over what its files say (e.g. "
          "en-de-small=en-de)");
ABSL_FLAG(std::string, pivot_language, "en",
          "Where no model translates a pair, chain two through this language (source -> it -> "
          "target); empty: never");
ABSL_FLAG(std::string, data_dir, "",
          "Directory the server keeps its glossaries in (made if missing; they survive restarts); "
          "empty: in memory only");
ABSL_FLAG(int, max_beam_size, 8, "Largest beam_size a request may ask for");
ABSL_FLAG(int, max_length, 512, "Largest max_length a request may ask for");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(30),
          "On SIGTERM/SIGINT, time given to in-flight requests before they are cut off (the "
          "process exits within it + 5 s, with status 1 if a decoder step is stuck)");
ABSL_FLAG(int, num_threads, 0, "Compute threads; 0 = every core");
ABSL_FLAG(int, replicas, 0,
          "Engine instances per model, sharing its weights and the compute threads (0: the "
          "server's choice, one per compute thread on the CPU up to 4, one on a GPU)");
ABSL_FLAG(std::vector<std::string>, model_replicas, {},
          "NAME=N,...: a model's replicas, over --replicas");
ABSL_FLAG(int, max_request_rows, transerve::AdmissionPolicy{}.max_request_live,
          "While calls of at most this many decoder rows (sentences x beam) are about, the most "
          "rows one larger request decodes at once, one sentence at least (0: no bound)");
ABSL_FLAG(int, max_message_mb, 16, "Largest gRPC message, in MiB");
ABSL_FLAG(int, keepalive_time_ms, 60000, "gRPC keepalive ping interval");
ABSL_FLAG(int, keepalive_timeout_ms, 20000, "gRPC keepalive ping timeout");
ABSL_FLAG(bool, warmup, true, "Translate one sentence per model before reporting SERVING");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain; with --tls_key, serve TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM roots: with TLS, require client certificates they sign (mutual TLS)");
ABSL_FLAG(std::string, auth_tokens_file, "",
          "File of accepted bearer tokens, one per line ('#' comments); Translator calls then "
          "need 'authorization: Bearer TOKEN' (else UNAUTHENTICATED; health stays open)");
ABSL_FLAG(std::string, auth_token, "",
          "If set, Translator calls need the metadata 'authorization: Bearer TOKEN' "
          "(else UNAUTHENTICATED); prefer TRANSERVE_AUTH_TOKEN over the command line");
ABSL_FLAG(std::string, log_level, "info", "trace, debug (one line per request), info, warn, error");

namespace transerve {
namespace {

// TRANSERVE_<NAME> for every flag of this file, before the command line is parsed.
void ApplyEnvironment() {
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!absl::StrContains(flag->Filename(), "server_main")) continue;
    std::string var = "TRANSERVE_";
    for (char c : name) var += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const char* value = std::getenv(var.c_str());
    if (value == nullptr) continue;
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      std::cerr << "transerve-server: " << var << "=" << value << ": " << error << "\n";
      std::exit(2);
    }
  }
}

// Ends the process at once with `code`, the log flushed: for when a stuck thread still uses
// what destructors (of the server, of statics) would destroy.
[[noreturn]] void ExitNow(int code) {
  Log().flush();
  std::fflush(nullptr);
  std::_Exit(code);
}

// The test hook of docs/server.md: TRANSERVE_TEST_BLOCK_STEP=N makes the N-th decoder step of
// every model block forever, as a hung device would; N:DURATION (e.g. 3:2s) blocks it that long.
// Read here, never by the engine.
bool StepHookFromEnvironment(SchedulerOptions* options) {
  const char* value = std::getenv("TRANSERVE_TEST_BLOCK_STEP");
  if (value == nullptr || *value == '\0') return true;
  const std::vector<std::string> parts = absl::StrSplit(value, absl::MaxSplits(':', 1));
  int64_t step = 0;
  absl::Duration pause = absl::InfiniteDuration();
  if (!absl::SimpleAtoi(parts[0], &step) || step < 1 ||
      (parts.size() == 2 &&
       (!absl::ParseDuration(parts[1], &pause) || pause < absl::ZeroDuration()))) {
    std::cerr << "transerve-server: TRANSERVE_TEST_BLOCK_STEP=" << value
              << ": want N or N:DURATION (N >= 1)\n";
    return false;
  }
  Log().warn("test hook: decoder step {} of every model blocks for {}", step,
             absl::FormatDuration(pause));
  options->before_step_for_test = [step, pause](int64_t number) {
    if (number != step) return;
    if (pause == absl::InfiniteDuration()) {
      for (;;) absl::SleepFor(absl::Hours(1));
    }
    absl::SleepFor(pause);
  };
  return true;
}

// --model_dir may be repeated: joins every occurrence into one comma list (absl keeps the last).
std::vector<char*> JoinRepeatedModelDirs(int argc, char** argv, std::string* joined) {
  std::vector<std::string> dirs;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    if (a == "--") {
      for (; i < argc; ++i) rest.push_back(argv[i]);
      break;
    }
    if (absl::StartsWith(a, "--model_dir=") || absl::StartsWith(a, "-model_dir=")) {
      dirs.emplace_back(a.substr(a.find('=') + 1));
    } else if ((a == "--model_dir" || a == "-model_dir") && i + 1 < argc) {
      dirs.emplace_back(argv[++i]);
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (!dirs.empty()) {
    *joined = absl::StrCat("--model_dir=", absl::StrJoin(dirs, ","));
    rest.push_back(joined->data());
  }
  return rest;
}

int Run() {
  SetLogLevel(absl::GetFlag(FLAGS_log_level));
  ServerConfig config;
  for (const auto& d : absl::GetFlag(FLAGS_model_dir)) {
    for (auto part : absl::StrSplit(d, ',', absl::SkipWhitespace())) {
      config.model_dirs.emplace_back(part);
    }
  }
  config.model_repository = absl::GetFlag(FLAGS_model_repository);
  config.repository_poll_interval = absl::GetFlag(FLAGS_repository_poll_interval);
  config.preload = absl::GetFlag(FLAGS_preload);
  config.model_memory_mb = absl::GetFlag(FLAGS_model_memory_mb);
  config.max_loaded_models = absl::GetFlag(FLAGS_max_loaded_models);
  config.model_load_threads = absl::GetFlag(FLAGS_model_load_threads);
  config.default_model = absl::GetFlag(FLAGS_default_model);
  if (config.model_dirs.empty() && config.model_repository.empty()) {
    std::cerr << "transerve-server: --model_dir or --model_repository is required\n";
    return 2;
  }
  if (config.model_memory_mb < 0 || config.max_loaded_models < 0 ||
      config.repository_poll_interval <= absl::ZeroDuration()) {
    std::cerr << "transerve-server: --model_memory_mb and --max_loaded_models must not be "
                 "negative, --repository_poll_interval must be positive\n";
    return 2;
  }
  if (config.model_load_threads < 0) {
    std::cerr << "transerve-server: --model_load_threads must not be negative\n";
    return 2;
  }
  if (config.model_load_threads == 0) {
    // Two loads on two cores each took twice as long as one (BENCHMARKS.md, "Model
    // repository"): a load is CPU-bound, so more loaders pay only with more cores.
    config.model_load_threads =
        std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / 2);
  }
  const std::string batching = absl::GetFlag(FLAGS_batching);
  if (batching == "continuous") {
    config.scheduler.admission.mode = BatchingMode::kContinuous;
  } else if (batching == "static") {
    config.scheduler.admission.mode = BatchingMode::kStatic;
  } else {
    std::cerr << "transerve-server: --batching must be continuous or static\n";
    return 2;
  }
  const std::string host = absl::GetFlag(FLAGS_host);
  config.address = absl::StrCat(host, ":", absl::GetFlag(FLAGS_port));
  const int metrics_port = absl::GetFlag(FLAGS_metrics_port);
  const std::string metrics_host =
      absl::GetFlag(FLAGS_metrics_host).empty() ? host : absl::GetFlag(FLAGS_metrics_host);
  config.metrics_address = metrics_port < 0 ? "" : absl::StrCat(metrics_host, ":", metrics_port);
  config.http_port = absl::GetFlag(FLAGS_http_port);
  config.http_host = absl::GetFlag(FLAGS_http_host).empty() ? host : absl::GetFlag(FLAGS_http_host);
  config.http_threads = absl::GetFlag(FLAGS_http_threads);
  config.http_io_timeout = absl::GetFlag(FLAGS_http_io_timeout);
  config.device = absl::GetFlag(FLAGS_device);
  config.dtype = absl::GetFlag(FLAGS_dtype);
  config.cpu_isa = absl::GetFlag(FLAGS_cpu_isa);
  config.num_threads = absl::GetFlag(FLAGS_num_threads);
  config.kv_cache_bytes = absl::GetFlag(FLAGS_kv_cache_mb) << 20;
  config.scheduler.admission.max_batch_sequences = absl::GetFlag(FLAGS_max_batch_sequences);
  config.scheduler.admission.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  config.scheduler.admission.admission_group = absl::GetFlag(FLAGS_admission_group);
  config.scheduler.admission.max_admission_wait_steps =
      absl::GetFlag(FLAGS_max_admission_wait_steps);
  config.scheduler.max_queue = absl::GetFlag(FLAGS_max_queue);
  config.scheduler.max_queue_wait = absl::GetFlag(FLAGS_max_queue_wait);
  config.limits.max_texts = absl::GetFlag(FLAGS_max_texts_per_request);
  config.limits.max_text_chars = absl::GetFlag(FLAGS_max_text_chars);
  config.limits.max_sentences = absl::GetFlag(FLAGS_max_sentences_per_request);
  for (const std::string& entry : absl::GetFlag(FLAGS_model_languages)) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "transerve-server: --model_languages wants NAME=SRC-TGT, got '" << entry
                << "'\n";
      return 2;
    }
    config.model_languages[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  if (const std::string pivot = absl::GetFlag(FLAGS_pivot_language); !pivot.empty()) {
    config.pivot_language = transerve::text::CanonicalLanguage(pivot);
    if (config.pivot_language.empty()) {
      std::cerr << "transerve-server: --pivot_language '" << pivot
                << "' is not a language code (ISO 639-1 or 639-3)\n";
      return 2;
    }
  } else {
    config.pivot_language.clear();
  }
  config.data_dir = absl::GetFlag(FLAGS_data_dir);
  config.replicas = absl::GetFlag(FLAGS_replicas);
  for (const std::string& entry : absl::GetFlag(FLAGS_model_replicas)) {
    const size_t eq = entry.find('=');
    int n = 0;
    if (eq == std::string::npos || eq == 0 || !absl::SimpleAtoi(entry.substr(eq + 1), &n) ||
        n < 1) {
      std::cerr << "transerve-server: --model_replicas wants NAME=N (N >= 1), got '" << entry
                << "'\n";
      return 2;
    }
    config.model_replicas[entry.substr(0, eq)] = n;
  }
  config.scheduler.admission.max_request_live = absl::GetFlag(FLAGS_max_request_rows);
  config.limits.max_source_tokens = absl::GetFlag(FLAGS_max_source_tokens);
  config.limits.max_beam_size = absl::GetFlag(FLAGS_max_beam_size);
  config.limits.max_length = absl::GetFlag(FLAGS_max_length);
  config.max_message_bytes = absl::GetFlag(FLAGS_max_message_mb) << 20;
  config.keepalive_time_ms = absl::GetFlag(FLAGS_keepalive_time_ms);
  config.keepalive_timeout_ms = absl::GetFlag(FLAGS_keepalive_timeout_ms);
  config.warmup = absl::GetFlag(FLAGS_warmup);
  config.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  config.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  config.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  if (const std::string file = absl::GetFlag(FLAGS_auth_tokens_file); !file.empty()) {
    auto tokens = ReadTokensFile(file);
    if (!tokens.ok()) {
      std::cerr << "transerve-server: --auth_tokens_file: " << tokens.status().message() << "\n";
      return 2;
    }
    config.auth_tokens = *std::move(tokens);
  }
  if (const std::string token = absl::GetFlag(FLAGS_auth_token); !token.empty()) {
    config.auth_tokens.push_back(token);
  }
  if (const std::string file = absl::GetFlag(FLAGS_admin_tokens_file); !file.empty()) {
    auto tokens = ReadTokensFile(file);
    if (!tokens.ok()) {
      std::cerr << "transerve-server: --admin_tokens_file: " << tokens.status().message() << "\n";
      return 2;
    }
    config.admin_tokens = *std::move(tokens);
  }
  if (const std::string token = absl::GetFlag(FLAGS_admin_token); !token.empty()) {
    config.admin_tokens.push_back(token);
  }
  if (!StepHookFromEnvironment(&config.scheduler)) return 2;
  if (config.scheduler.admission.max_batch_sequences < 1 ||
      config.scheduler.admission.max_batch_tokens < 1 || config.scheduler.max_queue < 1 ||
      config.scheduler.admission.admission_group < 1 ||
      config.scheduler.admission.max_admission_wait_steps < 0 || config.limits.max_texts < 1 ||
      config.limits.max_text_chars < 1 || config.limits.max_source_tokens < 2 ||
      config.limits.max_beam_size < 1 || config.limits.max_length < 1 || config.replicas < 0 ||
      config.scheduler.admission.max_request_live < 0 ||
      config.scheduler.max_queue_wait <= absl::ZeroDuration()) {
    std::cerr << "transerve-server: batching, queue and request limits must be positive\n";
    return 2;
  }

  // SIGTERM/SIGINT (drain) and SIGHUP (reload the repository) are taken synchronously by one
  // thread; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::atomic<bool> device_lost{false};
  config.on_device_lost = [&device_lost, main_thread = pthread_self()](const absl::Status&) {
    device_lost.store(true);
    pthread_kill(main_thread, SIGTERM);
  };
  auto server = TranserveServer::Start(config);
  if (!server.ok()) {
    Log().error("cannot start: {}", server.status().ToString());
    return 1;
  }
  Log().info("listening on {}:{} (metrics port {}, HTTP port {}); loading models", host,
             (*server)->port(), (*server)->metrics_port(), (*server)->http_port());
  std::atomic<bool> load_failed{false};
  // A failed load or a lost device wakes this thread with a signal aimed at it: one sent to the
  // process could land, before this thread reaches sigwait, on a thread started ahead of main
  // (OpenBLAS's) that does not block SIGTERM, and end the process with it instead of exit
  // status 1.
  const pthread_t main_thread = pthread_self();
  absl::Notification loaded;  // LoadModels returned, well or not
  std::thread loader([&] {
    if (auto s = (*server)->LoadModels(); !s.ok()) {
      Log().error("cannot load models: {}", s.ToString());
      load_failed.store(true);
      loaded.Notify();
      pthread_kill(main_thread, SIGTERM);
      return;
    }
    Log().info("serving: {}", (*server)->Summary());
    loaded.Notify();
  });
  int sig = 0;
  while (true) {
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    if (loaded.HasBeenNotified() && !load_failed.load()) {
      Log().info("SIGHUP: rescanning the model repository and reloading its loaded models");
      (*server)->ReloadModels();
    } else {
      Log().info("SIGHUP while loading the models: ignored");
    }
  }
  const absl::Time signalled = absl::Now();
  const absl::Duration drain = absl::GetFlag(FLAGS_drain_timeout);
  // Loading (or its warm-up) may hang like any engine call: it gets the drain's time, no more.
  if (!loaded.WaitForNotificationWithTimeout(drain)) {
    Log().error("signal {} while loading the models, still loading after {}: exiting 1",
                sig == SIGTERM ? "SIGTERM" : "SIGINT", absl::FormatDuration(drain));
    ExitNow(1);
  }
  loader.join();
  if (load_failed.load()) {
    if (!(*server)->Drain(absl::ZeroDuration()).ok()) ExitNow(1);
    return 1;
  }
  const absl::Duration left = std::max(absl::ZeroDuration(), drain - (absl::Now() - signalled));
  // The flag's value, unless loading took some of it.
  const std::string shown = absl::FormatDuration(absl::Ceil(left, absl::Milliseconds(100)));
  if (device_lost.load()) {
    Log().error("the GPU is lost: draining (up to {}), then exiting 1 to be restarted", shown);
  } else {
    Log().info("signal {}: draining (up to {})", sig == SIGTERM ? "SIGTERM" : "SIGINT", shown);
  }
  const absl::Status drained = (*server)->Drain(left);
  Log().info("stopped: {}", (*server)->AnsweredSummary());
  if (!drained.ok()) {
    // A stuck thread still uses the server's models: no destructor may run under it.
    Log().error("the drain did not end cleanly ({}): exiting 1 without cleaning up",
                std::string(drained.message()));
    ExitNow(1);
  }
  return device_lost.load() ? 1 : 0;
}

}  // namespace
}  // namespace transerve

int main(int argc, char** argv) {
  transerve::PrepareEngineProcess(argv);
  absl::SetProgramUsageMessage(
      "Serves Marian translation models over gRPC and HTTP.\n"
      "  transerve-server --model_dir=DIR[,DIR...] | --model_repository=DIR [--port=50051]\n"
      "                   [--http_port=5000] [--admin_token=T]\n"
      "                   [--metrics_port=9464]\n"
      "                   [--device=auto|cpu|cuda] [--batching=continuous|static]\n"
      "Every flag may also come from TRANSERVE_<NAME> (e.g. TRANSERVE_MODEL_DIR).");
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view) { return true; };
  absl::SetFlagsUsageConfig(usage);
  transerve::ApplyEnvironment();
  std::string joined;
  std::vector<char*> args = transerve::JoinRepeatedModelDirs(argc, argv, &joined);
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  return transerve::Run();
}
