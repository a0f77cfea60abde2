// The load generator against a stand-in server with known delays (bench/echo_service): the
// percentiles it reports, open-loop latency that includes queueing (no coordinated omission),
// errors by status, streaming's first chunk, the JSON contract, and a dead target.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "bench/echo_service.h"
#include "client/loadgen/load_run.h"
#include "tests/testing/paths.h"

namespace transerve {
namespace {

using std::chrono::milliseconds;

class EchoServer {
 public:
  explicit EchoServer(EchoTranslator::Options options) : service_(options) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~EchoServer() { server_->Shutdown(std::chrono::system_clock::now()); }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  std::vector<std::shared_ptr<grpc::Channel>> Channels() const {
    return {grpc::CreateChannel(address(), grpc::InsecureChannelCredentials())};
  }

 private:
  EchoTranslator service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

LoadOptions Options(std::vector<std::string> texts, double seconds) {
  LoadOptions o;
  o.texts = std::move(texts);
  o.duration = absl::Milliseconds(static_cast<int64_t>(seconds * 1000));
  o.warmup = absl::Milliseconds(200);
  return o;
}

// Nine fast requests (10 ms) for one slow one (100 ms): p50 is 10 ms, p99 100 ms.
std::vector<std::string> TenToOne() {
  std::vector<std::string> texts(9, "sleep_ms=10 a b");
  texts.push_back("sleep_ms=100 c");
  return texts;
}

TEST(LoadRun, ClosedLoopPercentilesMatchTheServersDelays) {
  EchoServer server({});
  LoadOptions o = Options(TenToOne(), 2.0);
  o.concurrency = 4;
  auto report = RunLoad(server.Channels(), o);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_GT(report->ok, 50);
  EXPECT_EQ(report->ok, report->sent);
  EXPECT_TRUE(report->errors.empty());
  // Delays are lower bounds; the machine adds a little (generous upper bounds: shared CI).
  EXPECT_GE(report->latency.Percentile(50), 0.010);
  EXPECT_LE(report->latency.Percentile(50), 0.030);
  EXPECT_GE(report->latency.Percentile(99), 0.100);
  EXPECT_LE(report->latency.Percentile(99), 0.160);
  EXPECT_GE(report->latency.min(), 0.010);
  // Every request is one sentence of 3 (fast) or 2 (slow) words plus EOS.
  EXPECT_EQ(report->sentences, report->ok);
  EXPECT_GE(report->target_tokens, 3 * report->ok);
  EXPECT_LE(report->target_tokens, 4 * report->ok);
  EXPECT_EQ(report->source_tokens, report->target_tokens);
}

TEST(LoadRun, OpenLoopLatencyIncludesTheQueueOfAnOverloadedServer) {
  // Serial 20 ms per request: at most 50/s. Offered 100/s for 2 s, the queue grows all along;
  // measured from the scheduled send time, late requests wait about a second or more. A load
  // generator that only timed each call after it left (coordinated omission) would report
  // about 20 ms.
  EchoServer server({.default_delay = milliseconds(20), .serial = true});
  LoadOptions o = Options({"x y"}, 2.0);
  o.mode = LoadOptions::Mode::kOpenLoop;
  o.rate = 100;
  o.warmup = absl::ZeroDuration();
  auto report = RunLoad(server.Channels(), o);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_NEAR(report->sent, 200, 60);  // Poisson: 200 ± 4 sigma
  EXPECT_EQ(report->ok, report->sent);
  EXPECT_GT(report->latency.Percentile(50), 0.4);
  EXPECT_GT(report->latency.max(), 1.2);
  EXPECT_LT(report->latency.min(), 0.1);
  // The answers took about twice the window: throughput is the server's, not the offer.
  EXPECT_LT(static_cast<double>(report->ok) / report->seconds, 65.0);
}

TEST(LoadRun, ClosedLoopAgainstTheSameServerSeesNoQueue) {
  EchoServer server({.default_delay = milliseconds(20), .serial = true});
  LoadOptions o = Options({"x y"}, 1.0);
  o.concurrency = 1;
  auto report = RunLoad(server.Channels(), o);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_GE(report->latency.Percentile(50), 0.020);
  EXPECT_LE(report->latency.Percentile(50), 0.040);
}

TEST(LoadRun, ErrorsAreCountedByStatusName) {
  EchoServer server({});
  LoadOptions o = Options({"status=RESOURCE_EXHAUSTED a", "b c", "status=UNAVAILABLE d", "e"}, 1.0);
  o.concurrency = 2;
  auto report = RunLoad(server.Channels(), o);
  ASSERT_TRUE(report.ok()) << report.status();
  const int64_t exhausted = report->errors["RESOURCE_EXHAUSTED"];
  const int64_t unavailable = report->errors["UNAVAILABLE"];
  EXPECT_GT(exhausted, 10);
  EXPECT_GT(unavailable, 10);
  EXPECT_EQ(report->errors.size(), 2u);
  EXPECT_EQ(report->ok + exhausted + unavailable, report->sent);
  EXPECT_NEAR(static_cast<double>(report->ok) / report->sent, 0.5, 0.05);
  EXPECT_EQ(report->latency.count(), report->ok);  // latencies of successful calls only
}

TEST(LoadRun, KeptCallsAreTheTimelineOfTheHistogram) {
  // One text in ten is slow, one in ten fails: the timeline must name each call's latency and
  // status, each due inside the window, and agree with the histogram and the error counts.
  std::vector<std::string> texts(8, "sleep_ms=5 a");
  texts.push_back("sleep_ms=80 slow");
  texts.push_back("status=UNAVAILABLE x");
  LoadOptions o = Options(texts, 1.0);
  o.concurrency = 3;
  o.keep_calls = true;
  auto report = RunLoad(EchoServer({}).Channels(), o);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(static_cast<int64_t>(report->calls.size()), report->sent);
  int64_t ok = 0, unavailable = 0, slow = 0;
  for (const LoadReport::Call& c : report->calls) {
    EXPECT_GE(c.due_seconds, 0.0);
    EXPECT_LT(c.due_seconds, 1.0);
    if (c.status == "OK") {
      ++ok;
      if (c.latency_seconds >= 0.080) ++slow;
    } else {
      EXPECT_EQ(c.status, "UNAVAILABLE");
      ++unavailable;
    }
  }
  EXPECT_EQ(ok, report->ok);
  EXPECT_EQ(unavailable, report->errors["UNAVAILABLE"]);
  EXPECT_GT(slow, 0);
  EXPECT_LT(slow, ok / 4);
  const nlohmann::json j = ReportJson(*report);
  ASSERT_EQ(j["calls"].size(), report->calls.size());
  EXPECT_EQ(j["calls"][0][2].get<std::string>(), report->calls[0].status);
  // Without keep_calls the report holds none.
  o.keep_calls = false;
  auto plain = RunLoad(EchoServer({}).Channels(), o);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->calls.empty());
  EXPECT_FALSE(ReportJson(*plain).contains("calls"));
}

TEST(LoadRun, StreamingReportsTheFirstChunkBeforeTheAnswer) {
  EchoServer server({});
  LoadOptions o = Options({"sleep_ms=50 hello world"}, 1.0);
  o.concurrency = 2;
  o.stream = true;
  auto report = RunLoad(server.Channels(), o);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_GT(report->ok, 0);  // how many fit the window is the machine's
  EXPECT_EQ(report->first_chunk.count(), report->ok);
  EXPECT_LT(report->first_chunk.Percentile(50), 0.030);
  EXPECT_GE(report->latency.Percentile(50), 0.050);
  EXPECT_EQ(report->target_tokens, 4 * report->ok);
  const nlohmann::json j = ReportJson(*report);
  EXPECT_TRUE(j.contains("time_to_first_chunk_seconds"));
}

TEST(LoadRun, SeveralSentencesPerRequest) {
  EchoServer server({});
  LoadOptions o = Options({"a", "b c"}, 0.5);
  o.concurrency = 2;
  o.sentences_per_request = 3;
  auto report = RunLoad(server.Channels(), o);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->sentences, 3 * report->ok);
}

TEST(LoadRun, DeadTargetIsAClearErrorNotAHang) {
  // Nothing listens on a port that a server just gave back.
  std::string address;
  {
    EchoServer gone({});
    address = gone.address();
  }
  LoadOptions o = Options({"a"}, 5.0);
  o.connect_timeout = absl::Seconds(1);
  const auto start = std::chrono::steady_clock::now();
  auto report = RunLoad({grpc::CreateChannel(address, grpc::InsecureChannelCredentials())}, o);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(report.status().message().find("cannot connect"), std::string::npos);
}

TEST(LoadRun, InvalidOptionsAreRejected) {
  EchoServer server({});
  LoadOptions o = Options({}, 1.0);
  EXPECT_EQ(RunLoad(server.Channels(), o).status().code(), absl::StatusCode::kInvalidArgument);
  o = Options({"a"}, 1.0);
  o.concurrency = 0;
  EXPECT_EQ(RunLoad(server.Channels(), o).status().code(), absl::StatusCode::kInvalidArgument);
}

// The binary: the JSON keys of docs/architecture.md section 2, and its exit codes.
std::string Loadgen() { return testing::BinaryDir() + "/bin/transerve-loadgen"; }

int RunCommand(const std::string& command, std::string* output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) output->append(buffer);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string WriteInput(const std::vector<std::string>& lines) {
  const std::string path = ::testing::TempDir() + "/loadgen_input.txt";
  std::ofstream out(path);
  for (const auto& l : lines) out << l << "\n";
  return path;
}

TEST(LoadgenBinary, JsonHasTheContractKeys) {
  EchoServer server({});
  const std::string json = ::testing::TempDir() + "/loadgen.json";
  std::string output;
  const int rc =
      RunCommand(absl::StrCat(Loadgen(), " --target=", server.address(),
                              " --input=", WriteInput({"sleep_ms=1 a b", "c"}),
                              " --concurrency=2 --duration=0.5 --warmup=0.1 --json=", json),
                 &output);
  ASSERT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("latency (ms)"), std::string::npos) << output;
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_TRUE(j["ok"].is_number_integer());
  EXPECT_GT(j["ok"].get<int64_t>(), 0);
  EXPECT_TRUE(j["errors"].is_object());
  EXPECT_TRUE(j["requests_per_second"].is_number());
  EXPECT_TRUE(j["target_tokens_per_second"].is_number());
  for (const char* key : {"p50", "p90", "p99", "max"}) {
    EXPECT_TRUE(j["latency_seconds"][key].is_number()) << key;
  }
  EXPECT_LE(j["latency_seconds"]["p50"].get<double>(), j["latency_seconds"]["p99"].get<double>());
}

TEST(LoadgenBinary, SweepWritesOneRunPerValue) {
  EchoServer server({});
  const std::string json = ::testing::TempDir() + "/sweep.json";
  std::string output;
  const int rc = RunCommand(
      absl::StrCat(Loadgen(), " --target=", server.address(), " --input=", WriteInput({"a b"}),
                   " --sweep=rate:50,100 --duration=0.5", " --warmup=0 --json=", json),
      &output);
  ASSERT_EQ(rc, 0) << output;
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["rate"].get<double>(), 50.0);
  EXPECT_EQ(j["runs"][1]["rate"].get<double>(), 100.0);
}

TEST(LoadgenBinary, DeadTargetExitsNonZeroWithTheReason) {
  std::string output;
  const auto start = std::chrono::steady_clock::now();
  const int rc =
      RunCommand(absl::StrCat(Loadgen(), " --target=127.0.0.1:1 --input=", WriteInput({"a"}),
                              " --concurrency=1 --duration=1"),
                 &output);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  EXPECT_EQ(rc, 1);
  EXPECT_NE(output.find("cannot connect"), std::string::npos) << output;
}

TEST(LoadgenBinary, UnusableProtocolFlagsExitWithTheReason) {
  const std::string input = WriteInput({"a"});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--protocol=ftp", "--protocol: grpc or http"},
      {"--protocol=http --http_api=soap", "unknown HTTP API 'soap'"},
      {"--protocol=http --http_api=libretranslate --stream", "--stream is the v1 API's"},
      {"--protocol=http --http_target=nohost", "is not HOST:PORT"},
      {"--protocol=http --tls", "--tls is gRPC's"}};
  for (const auto& [flags, reason] : cases) {
    std::string output;
    const int rc = RunCommand(
        absl::StrCat(Loadgen(), " --input=", input, " --concurrency=1 --duration=1 ", flags),
        &output);
    EXPECT_EQ(rc, 1) << flags;
    EXPECT_NE(output.find(reason), std::string::npos) << flags << ": " << output;
  }
}

}  // namespace
}  // namespace transerve
