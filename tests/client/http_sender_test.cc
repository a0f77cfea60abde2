// The load loop over HTTP against a stand-in front end (an httplib server in the test): the
// routes and headers each API sends, one keep-alive connection per worker, errors counted by
// their gRPC names, streaming's first event, and a dead address.
#include "client/loadgen/http_sender.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "client/loadgen/load_run.h"

namespace transerve {
namespace {

using nlohmann::json;

class FakeFrontEnd {
 public:
  FakeFrontEnd() {
    server_.set_keep_alive_max_count(100000);  // httplib's default closes after 5 calls
    server_.set_tcp_nodelay(true);
    port_ = server_.bind_to_any_port("127.0.0.1");
  }
  ~FakeFrontEnd() { Stop(); }
  httplib::Server& server() { return server_; }
  void Start() {
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  void Stop() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return port_; }

  // Remembers which client connections (their ports) sent requests.
  void Saw(const httplib::Request& request) {
    std::lock_guard<std::mutex> lock(mu_);
    client_ports_.insert(request.remote_port);
  }
  size_t connections() {
    std::lock_guard<std::mutex> lock(mu_);
    return client_ports_.size();
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::set<int> client_ports_;
};

LoadOptions Options(std::vector<std::string> texts) {
  LoadOptions o;
  o.texts = std::move(texts);
  o.duration = absl::Milliseconds(700);
  o.warmup = absl::Milliseconds(100);
  o.connect_timeout = absl::Seconds(2);
  return o;
}

HttpSenderOptions SenderOptions(int port, HttpApi api, int connections) {
  HttpSenderOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.api = api;
  o.connections = connections;
  return o;
}

int RandomInt(int lo, int hi) {
  static std::mt19937 rng(std::random_device{}());
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

TEST(HttpSender, V1ClosedLoopOverOneKeepAliveConnectionPerWorker) {
  FakeFrontEnd front;
  const int tokens = RandomInt(2, 30);
  const std::string token = "t" + std::to_string(RandomInt(1000, 9999));
  std::atomic<int> unauthorised{0};
  front.server().Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"SERVING"})", "application/json");
  });
  front.server().Post("/v1/translate", [&](const httplib::Request& req, httplib::Response& res) {
    front.Saw(req);
    if (req.get_header_value("Authorization") != "Bearer " + token) ++unauthorised;
    const json body = json::parse(req.body);
    json translations = json::array();
    for (const auto& text : body["texts"]) {
      translations.push_back({{"text", text}, {"targetTokenCount", tokens}});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    res.set_content(json{{"translations", translations}}.dump(), "application/json");
  });
  front.Start();
  const int concurrency = RandomInt(2, 4);
  HttpSenderOptions so = SenderOptions(front.port(), HttpApi::kV1, concurrency);
  so.auth_token = token;
  auto sender = HttpSender::Create(so);
  ASSERT_TRUE(sender.ok()) << sender.status();
  LoadOptions o = Options({"a b", "c"});
  o.concurrency = concurrency;
  o.sentences_per_request = 2;
  auto report = RunLoad(**sender, o);
  ASSERT_TRUE(report.ok()) << report.status();
  // Counts over a time window depend on the machine: ask only for more calls than workers.
  EXPECT_GT(report->ok, concurrency);
  EXPECT_EQ(report->ok, report->sent);
  EXPECT_TRUE(report->errors.empty());
  EXPECT_EQ(report->sentences, 2 * report->ok);
  EXPECT_EQ(report->target_tokens, 2 * tokens * report->ok);
  EXPECT_EQ(unauthorised.load(), 0);
  // Keep-alive: every worker kept its one connection for all its calls.
  EXPECT_EQ(front.connections(), static_cast<size_t>(concurrency));
}

TEST(HttpSender, LibreTranslateErrorsAreCountedByGrpcName) {
  FakeFrontEnd front;
  std::atomic<int> calls{0};
  std::atomic<int> bad_bodies{0};
  front.server().Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  front.server().Post("/translate", [&](const httplib::Request& req, httplib::Response& res) {
    const json body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body["q"].is_string() || body["source"] != "en" ||
        body["target"] != "de") {
      ++bad_bodies;
    }
    // Every other call refused as a full queue, every fourth as draining.
    const int n = calls.fetch_add(1);
    if (n % 2 == 1) {
      res.status = 429;
      res.set_content(R"({"error":"queue full"})", "application/json");
    } else if (n % 4 == 2) {
      res.status = 503;
      res.set_content(R"({"error":"draining"})", "application/json");
    } else {
      res.set_content(json{{"translatedText", "x"}}.dump(), "application/json");
    }
  });
  front.Start();
  auto sender = HttpSender::Create(SenderOptions(front.port(), HttpApi::kLibreTranslate, 1));
  ASSERT_TRUE(sender.ok());
  LoadOptions o = Options({"hello"});
  o.concurrency = 1;
  o.warmup = absl::ZeroDuration();
  auto report = RunLoad(**sender, o);
  ASSERT_TRUE(report.ok()) << report.status();
  const int64_t exhausted = report->errors["RESOURCE_EXHAUSTED"];
  const int64_t unavailable = report->errors["UNAVAILABLE"];
  // One worker, no warmup: the n-th call the server saw is the n-th the report counted, so
  // each status is counted exactly (calls n = 1, 3, 5... refused as full; n = 2, 6, 10...
  // as draining). Three calls show both kinds; how many fit the window is the machine's.
  const int64_t seen = calls.load();
  ASSERT_GE(seen, 3);
  EXPECT_EQ(report->sent, seen);
  EXPECT_EQ(exhausted, seen / 2);
  EXPECT_EQ(unavailable, (seen + 1) / 4);
  EXPECT_EQ(report->errors.size(), 2u);
  EXPECT_EQ(report->ok + exhausted + unavailable, report->sent);
  EXPECT_EQ(report->sentences, report->ok);
  EXPECT_EQ(bad_bodies.load(), 0);
}

TEST(HttpSender, V1StreamReportsTheFirstEvent) {
  FakeFrontEnd front;
  front.server().Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  front.server().Post("/v1/translate/stream", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
      const std::string first = "data: {\"textDelta\":\"Hallo\"}\n\n";
      sink.write(first.data(), first.size());
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
      const std::string rest =
          "data: {\"done\":true,\"translation\":{\"targetTokenCount\":3}}\n\n"
          "event: done\ndata: {}\n\n";
      sink.write(rest.data(), rest.size());
      sink.done();
      return true;
    });
  });
  front.Start();
  HttpSenderOptions so = SenderOptions(front.port(), HttpApi::kV1, 2);
  so.stream = true;
  auto sender = HttpSender::Create(so);
  ASSERT_TRUE(sender.ok());
  LoadOptions o = Options({"hello"});
  o.concurrency = 2;
  o.stream = true;
  auto report = RunLoad(**sender, o);
  ASSERT_TRUE(report.ok()) << report.status();
  // How many calls fit the window is the machine's (3 on a loaded sanitized CI run); each
  // one must report its first event.
  ASSERT_GT(report->ok, 0);
  EXPECT_TRUE(report->errors.empty());
  EXPECT_EQ(report->first_chunk.count(), report->ok);
  EXPECT_EQ(report->target_tokens, 3 * report->ok);
  // The first event comes a server-side pause before the end.
  EXPECT_LT(report->first_chunk.Percentile(50), report->latency.Percentile(50));
  EXPECT_GE(report->latency.Percentile(50), 0.040);
}

TEST(HttpSender, CallsLeftAfterTheDrainAreCancelled) {
  FakeFrontEnd front;
  front.server().Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  front.server().Post("/v1/translate", [](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::seconds(3));  // longer than the whole run
    res.set_content(R"({"translations":[{}]})", "application/json");
  });
  front.Start();
  const int concurrency = RandomInt(2, 3);
  auto sender = HttpSender::Create(SenderOptions(front.port(), HttpApi::kV1, concurrency));
  ASSERT_TRUE(sender.ok());
  LoadOptions o = Options({"a"});
  o.warmup = absl::ZeroDuration();
  o.concurrency = concurrency;
  o.drain_timeout = absl::Milliseconds(200);
  const auto start = std::chrono::steady_clock::now();
  auto report = RunLoad(**sender, o);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2900));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->sent, concurrency);
  EXPECT_EQ(report->ok, 0);
  EXPECT_EQ(report->errors["CANCELLED"], concurrency);
}

TEST(HttpSender, StreamingOverLibreTranslateIsRefused) {
  HttpSenderOptions so = SenderOptions(8080, HttpApi::kLibreTranslate, 1);
  so.stream = true;
  EXPECT_EQ(HttpSender::Create(so).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(HttpSender, DeadAddressIsAClearErrorNotAHang) {
  int port = 0;
  {
    FakeFrontEnd gone;  // started, so that stopping it closes its socket
    gone.Start();
    port = gone.port();
  }
  auto sender = HttpSender::Create(SenderOptions(port, HttpApi::kV1, 1));
  ASSERT_TRUE(sender.ok());
  LoadOptions o = Options({"a"});
  o.concurrency = 1;
  o.connect_timeout = absl::Seconds(1);
  const auto start = std::chrono::steady_clock::now();
  auto report = RunLoad(**sender, o);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(report.status().message().find("cannot connect"), std::string::npos);
}

TEST(SplitHostPort, AcceptsHostsAndBracketedV6) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(SplitHostPort("localhost:8080", &host, &port).ok());
  EXPECT_EQ(host, "localhost");
  EXPECT_EQ(port, 8080);
  ASSERT_TRUE(SplitHostPort("[::1]:9", &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 9);
  EXPECT_FALSE(SplitHostPort("localhost", &host, &port).ok());
  EXPECT_FALSE(SplitHostPort("h:0", &host, &port).ok());
  EXPECT_FALSE(SplitHostPort(":80", &host, &port).ok());
  EXPECT_FALSE(SplitHostPort("h:http", &host, &port).ok());
}

}  // namespace
}  // namespace transerve
