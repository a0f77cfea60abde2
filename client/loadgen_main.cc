// transerve-loadgen: load tests a transerve server (docs/architecture.md section 2).
//   closed loop: --concurrency=N calls in flight; open loop: --rate=R requests/s, Poisson
//   arrivals, latency from each call's scheduled time. A comma list of values is a sweep: one
//   run per value, the throughput-latency curve in one report.
//   --protocol=grpc (the Translator service) or http (the HTTP front end, --http_api=v1 or
//   libretranslate): the same load, histograms and report either way.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/channel.h"
#include "client/connection_flags.h"
#include "client/loadgen/grpc_sender.h"
#include "client/loadgen/http_sender.h"
#include "client/loadgen/load_run.h"

ABSL_FLAG(std::string, input, "", "Sentences to send, one per line (required)");
ABSL_FLAG(std::string, order, "sequential", "sequential (wrapping around) or random");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the random order and of the open-loop arrivals");
ABSL_FLAG(std::string, concurrency, "",
          "Closed loop: calls in flight; a comma list sweeps (e.g. 1,4,16,64)");
ABSL_FLAG(std::string, rate, "",
          "Open loop: requests per second, Poisson arrivals; a comma list sweeps (e.g. 5,10,20)");
ABSL_FLAG(std::string, sweep, "",
          "A throughput-latency curve in one run: rate:R1,R2,... or concurrency:N1,N2,... "
          "(the same as a list in --rate / --concurrency)");
ABSL_FLAG(double, duration, 10, "Measured seconds per run");
ABSL_FLAG(double, warmup, 2, "Seconds of load before each measured window (not counted)");
ABSL_FLAG(double, drain_timeout, 30,
          "Seconds calls still in flight after a window may take before they are cancelled");
ABSL_FLAG(int, sentences_per_request, 1, "Input lines per request");
ABSL_FLAG(std::string, model, "", "Model name; empty = the server's default");
ABSL_FLAG(int, beam_size, 0, "Beam size; 1 = greedy; 0 = the model's default");
ABSL_FLAG(int, max_length, 0, "Most generated tokens per sentence; 0 = the default");
ABSL_FLAG(double, deadline, 0,
          "Deadline per call in seconds (HTTP: sent as X-Request-Timeout-Ms); 0 = none");
ABSL_FLAG(bool, stream, false,
          "Call TranslateStream (HTTP: POST /v1/translate/stream); also reports the time to the "
          "first chunk (HTTP: the first event)");
ABSL_FLAG(int, connections, 0,
          "gRPC: TCP connections to spread calls over (0 = one per 64 in flight). HTTP: workers, "
          "each with one keep-alive connection carrying one call at a time (0 = --concurrency in "
          "a closed loop, 64 in an open loop; open-loop calls beyond them wait in the client, "
          "which their latency shows)");
ABSL_FLAG(int64_t, max_outstanding, 100000, "Open loop: most calls in flight");
ABSL_FLAG(std::string, protocol, "grpc",
          "grpc (the Translator service at --target) or http (the HTTP front end, see "
          "--http_api and --http_target)");
ABSL_FLAG(std::string, http_api, "v1",
          "--protocol=http: v1 (POST /v1/translate, with --stream POST /v1/translate/stream as "
          "server-sent events) or libretranslate (POST /translate; no --stream)");
ABSL_FLAG(std::string, http_target, "",
          "--protocol=http: HOST:PORT of the HTTP front end (the server's --http_port); empty = "
          "--target. Plain HTTP: --tls is gRPC's");
ABSL_FLAG(std::string, source_language, "en", "--http_api=libretranslate: the \"source\" sent");
ABSL_FLAG(std::string, target_language, "de", "--http_api=libretranslate: the \"target\" sent");
ABSL_FLAG(std::string, json, "", "Write the report (a sweep: every run) as JSON here");
ABSL_FLAG(bool, calls, false,
          "With --json: every measured call too, as [due seconds from the window's start, "
          "latency seconds, status] (a timeline of the tail)");

namespace transerve {
namespace {

absl::Duration Seconds(double s) { return absl::Milliseconds(static_cast<int64_t>(s * 1000)); }

bool ParseList(const std::string& text, std::vector<double>* values) {
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    double v = 0;
    if (!absl::SimpleAtod(part, &v) || !(v > 0)) return false;
    values->push_back(v);
  }
  return !values->empty();
}

int Fail(const std::string& message) {
  std::cerr << "transerve-loadgen: " << message << "\n";
  return 1;
}

// The protocol's sender for one run of `options` (its concurrency sizes the connections).
absl::StatusOr<std::unique_ptr<RequestSender>> MakeSender(bool http, HttpApi api,
                                                          HttpSenderOptions http_options,
                                                          const LoadOptions& options) {
  const bool closed = options.mode == LoadOptions::Mode::kClosedLoop;
  int connections = absl::GetFlag(FLAGS_connections);
  if (http) {
    http_options.api = api;
    http_options.stream = options.stream;
    http_options.auth_token = options.auth_token;
    http_options.deadline = options.deadline;
    http_options.connections = connections > 0 ? connections : closed ? options.concurrency : 64;
    http_options.source_language = absl::GetFlag(FLAGS_source_language);
    http_options.target_language = absl::GetFlag(FLAGS_target_language);
    auto sender = HttpSender::Create(std::move(http_options));
    if (!sender.ok()) return sender.status();
    return std::unique_ptr<RequestSender>(*std::move(sender));
  }
  if (connections <= 0) connections = closed ? (options.concurrency + 63) / 64 : 1;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int c = 0; c < connections; ++c) {
    auto channel = MakeChannel(ChannelOptionsFromFlags(c));
    if (!channel.ok()) return channel.status();
    channels.push_back(*std::move(channel));
  }
  return std::unique_ptr<RequestSender>(std::make_unique<GrpcSender>(
      std::move(channels), GrpcSenderOptions{.stream = options.stream,
                                             .auth_token = options.auth_token,
                                             .deadline = options.deadline}));
}

int Run() {
  LoadOptions options;
  const std::string input = absl::GetFlag(FLAGS_input);
  if (input.empty()) return Fail("--input is required (one sentence per line)");
  std::ifstream in(input);
  if (!in) return Fail("cannot read " + input);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) options.texts.push_back(line);
  }
  if (options.texts.empty()) return Fail(input + " has no sentences");

  std::string concurrency = absl::GetFlag(FLAGS_concurrency);
  std::string rate = absl::GetFlag(FLAGS_rate);
  if (const std::string sweep = absl::GetFlag(FLAGS_sweep); !sweep.empty()) {
    if (!concurrency.empty() || !rate.empty()) return Fail("--sweep replaces --rate/--concurrency");
    if (absl::StartsWith(sweep, "rate:")) {
      rate = sweep.substr(5);
    } else if (absl::StartsWith(sweep, "concurrency:")) {
      concurrency = sweep.substr(12);
    } else {
      return Fail("--sweep=rate:R1,R2,... or --sweep=concurrency:N1,N2,...");
    }
  }
  const bool closed = !concurrency.empty();
  const bool open = !rate.empty();
  if (closed == open) return Fail("give exactly one of --concurrency, --rate and --sweep");
  std::vector<double> values;
  if (!ParseList(closed ? concurrency : rate, &values)) {
    return Fail(
        "--concurrency / --rate / --sweep values must be positive numbers, comma-separated");
  }
  const std::string protocol = absl::GetFlag(FLAGS_protocol);
  if (protocol != "grpc" && protocol != "http") return Fail("--protocol: grpc or http");
  const bool http = protocol == "http";
  auto http_api = ParseHttpApi(absl::GetFlag(FLAGS_http_api));
  if (!http_api.ok()) return Fail("--http_api: " + std::string(http_api.status().message()));
  std::string http_target = absl::GetFlag(FLAGS_http_target);
  if (http_target.empty()) http_target = absl::GetFlag(FLAGS_target);
  HttpSenderOptions http_options;
  if (http) {
    if (ChannelOptionsFromFlags().tls)
      return Fail("--tls is gRPC's; the HTTP front end is plain HTTP");
    if (absl::Status s = SplitHostPort(http_target, &http_options.host, &http_options.port);
        !s.ok()) {
      return Fail("--http_target: " + std::string(s.message()));
    }
    if (*http_api == HttpApi::kLibreTranslate && absl::GetFlag(FLAGS_stream)) {
      return Fail("--stream is the v1 API's (--http_api=v1)");
    }
  }
  const std::string target = http ? http_target : absl::GetFlag(FLAGS_target);

  const std::string order = absl::GetFlag(FLAGS_order);
  if (order != "sequential" && order != "random") return Fail("--order: sequential or random");

  options.mode = closed ? LoadOptions::Mode::kClosedLoop : LoadOptions::Mode::kOpenLoop;
  options.random_order = order == "random";
  options.seed = absl::GetFlag(FLAGS_seed);
  options.duration = Seconds(absl::GetFlag(FLAGS_duration));
  options.warmup = Seconds(absl::GetFlag(FLAGS_warmup));
  options.drain_timeout = Seconds(absl::GetFlag(FLAGS_drain_timeout));
  options.sentences_per_request = absl::GetFlag(FLAGS_sentences_per_request);
  options.model = absl::GetFlag(FLAGS_model);
  options.decoding.set_beam_size(absl::GetFlag(FLAGS_beam_size));
  options.decoding.set_max_length(absl::GetFlag(FLAGS_max_length));
  options.deadline = Seconds(absl::GetFlag(FLAGS_deadline));
  options.stream = absl::GetFlag(FLAGS_stream);
  options.max_outstanding = absl::GetFlag(FLAGS_max_outstanding);
  options.keep_calls = absl::GetFlag(FLAGS_calls);
  options.auth_token = AuthTokenFromFlags();

  // A live progress line on a terminal only.
  const bool terminal = isatty(STDOUT_FILENO) != 0;
  if (terminal) {
    options.on_progress = [](const LoadProgress& p) {
      std::printf("\r%s %6.1fs  sent %lld  ok %lld  errors %lld  %.1f/s   ",
                  p.measuring ? "measuring" : "warming up", p.elapsed_seconds,
                  static_cast<long long>(p.sent), static_cast<long long>(p.ok),
                  static_cast<long long>(p.errors), p.completions_per_second);
      std::fflush(stdout);
    };
  }

  nlohmann::json runs = nlohmann::json::array();
  for (double value : values) {
    if (closed) {
      options.concurrency = static_cast<int>(value);
    } else {
      options.rate = value;
    }
    auto sender = MakeSender(http, *http_api, http_options, options);
    if (!sender.ok()) return Fail(std::string(sender.status().message()));
    auto report = RunLoad(**sender, options);
    if (terminal) std::printf("\r%80s\r", "");
    if (!report.ok()) return Fail(target + ": " + std::string(report.status().message()));
    std::cout << ReportText(*report) << std::flush;
    nlohmann::json run = ReportJson(*report);
    run["protocol"] = protocol;
    if (http) run["http_api"] = absl::GetFlag(FLAGS_http_api);
    runs.push_back(std::move(run));
  }
  if (runs.size() > 1) {
    std::printf("\n%-12s %12s %14s %10s %10s %10s %8s\n", closed ? "concurrency" : "rate",
                "requests/s", "target tok/s", "p50 ms", "p90 ms", "p99 ms", "errors");
    for (const auto& r : runs) {
      int64_t errors = 0;
      for (const auto& [code, n] : r["errors"].items()) errors += n.get<int64_t>();
      std::printf("%-12g %12.2f %14.1f %10.1f %10.1f %10.1f %8lld\n",
                  closed ? r["concurrency"].get<double>() : r["rate"].get<double>(),
                  r["requests_per_second"].get<double>(),
                  r["target_tokens_per_second"].get<double>(),
                  r["latency_seconds"]["p50"].get<double>() * 1e3,
                  r["latency_seconds"]["p90"].get<double>() * 1e3,
                  r["latency_seconds"]["p99"].get<double>() * 1e3, static_cast<long long>(errors));
    }
  }
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    const nlohmann::json out =
        runs.size() == 1
            ? runs[0]
            : nlohmann::json{{"target", target}, {"protocol", protocol}, {"runs", runs}};
    std::ofstream(path) << out.dump(2) << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace transerve

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "transerve-loadgen --target=HOST:PORT --input=FILE (--concurrency=N[,N...] | "
      "--rate=R[,R...]) [--duration=S] [--warmup=S] [--sentences_per_request=K] [--stream] "
      "[--protocol=grpc|http [--http_api=v1|libretranslate] [--http_target=HOST:PORT]] "
      "[--json=OUT]");
  absl::ParseCommandLine(argc, argv);
  return transerve::Run();
}
