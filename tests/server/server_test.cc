// Integration tests of transerve-server's service: a TranserveServer runs in-process on a free
// port with the tiny fixture model and is called through real gRPC channels.
#include "server/server.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "model/ops/cuda_plugin.h"
#include "model/translator/translator.h"
#include "tests/model/cuda/emulator_hooks.h"
#include "tests/server/test_server.h"
#include "tests/testing/paths.h"
#include "transerve/testing/reflection_wire.pb.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve {
namespace {

using grpc::StatusCode;
using testing::BaseConfig;
using testing::Call;
using testing::Connect;
using testing::ModelDir;
using testing::Request;
using testing::Sample;
using testing::WaitUntilDecoding;

constexpr int kMaxLength = 32;

// Mixed lengths, all distinct.
std::vector<std::string> TestTexts(int n) {
  static const char* kWords[] = {"the",  "house",   "is",  "small", "and",     "green", "we",
                                 "walk", "through", "old", "city",  "tonight", "with",  "friends"};
  std::vector<std::string> texts;
  for (int i = 0; i < n; ++i) {
    std::string t = absl::StrCat("Sentence ", i, ":");
    for (int w = 0; w < (i * 7) % 23 + 1; ++w) absl::StrAppend(&t, " ", kWords[(i + w * 3) % 14]);
    texts.push_back(t + ".");
  }
  return texts;
}

constexpr int kAlignmentTexts = 6;

struct Reference {
  std::vector<Translation> greedy;
  std::vector<Translation> beam;
  // The first kAlignmentTexts texts: source ids and the best hypotheses with alignments.
  std::vector<std::vector<int32_t>> sources;
  std::vector<Hypothesis> greedy_aligned;
  std::vector<Hypothesis> beam_aligned;
};

// Unbatched answers of the engine itself (batch size 1), computed before any server runs: the
// engine's thread pool is not meant to be driven from two threads at once.
const Reference& Expected() {
  static const Reference* ref = [] {
    auto* r = new Reference();
    TranslatorOptions o;
    o.model_dir = ModelDir();
    o.dtype = "float32";  // as BaseConfig
    o.num_threads = 1;
    auto t = Translator::Create(o);
    EXPECT_TRUE(t.ok()) << t.status();
    const auto texts = TestTexts(64);
    DecodingOptions d = (*t)->DefaultOptions();
    d.max_length = kMaxLength;
    d.beam_size = 1;
    d.num_hypotheses = 1;
    r->greedy = *(*t)->Translate(texts, d, 1);
    d.beam_size = 4;
    r->beam = *(*t)->Translate(texts, d, 1);
    d.return_alignment = true;
    for (int i = 0; i < kAlignmentTexts; ++i) {
      r->sources.push_back(*(*t)->Tokenize(texts[i], /*truncate=*/false));
      const std::span<const std::vector<int32_t>> one(&r->sources.back(), 1);
      d.beam_size = 1;
      r->greedy_aligned.push_back((*(*t)->TranslateIds(one, d))[0].hypotheses[0]);
      d.beam_size = 4;
      r->beam_aligned.push_back((*(*t)->TranslateIds(one, d))[0].hypotheses[0]);
    }
    return r;
  }();
  return *ref;
}

// The engine's reference answers are computed before the first server runs.
std::unique_ptr<TranserveServer> StartServer(const ServerConfig& c, bool load = true) {
  Expected();
  return testing::StartServer(c, load);
}

void ExpectSame(const v1::Translation& got, const Translation& want, const std::string& what) {
  EXPECT_EQ(got.text(), want.best.text) << what;
  std::vector<int32_t> ids(got.token_ids().begin(), got.token_ids().end());
  EXPECT_EQ(ids, want.best.ids) << what;
  EXPECT_NEAR(got.score(), want.best.score, 1e-4 * std::max(1.0f, std::abs(want.best.score)))
      << what;
}

grpc::health::v1::HealthCheckResponse::ServingStatus CheckHealth(grpc::Channel* ch,
                                                                 const std::string& service,
                                                                 grpc::Status* status = nullptr) {
  auto stub =
      grpc::health::v1::Health::NewStub(std::shared_ptr<grpc::Channel>(ch, [](grpc::Channel*) {}));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status s = stub->Check(&ctx, req, &resp);
  if (status != nullptr) *status = s;
  return s.ok() ? resp.status() : grpc::health::v1::HealthCheckResponse::UNKNOWN;
}

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = StartServer(BaseConfig()).release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    channel_ = Connect(*server_);
    stub_ = v1::Translator::NewStub(channel_);
  }
  static TranserveServer* server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Translator::Stub> stub_;
};
TranserveServer* ServerTest::server_ = nullptr;

TEST_F(ServerTest, TranslateEqualsEngineGreedyAndBeam) {
  const auto texts = TestTexts(12);
  for (int beam : {1, 4}) {
    v1::TranslateResponse resp;
    grpc::Status s = Call(stub_.get(), Request(texts, beam, kMaxLength), &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(resp.model(), "model");
    ASSERT_EQ(resp.translations_size(), static_cast<int>(texts.size()));
    const auto& want = beam == 1 ? Expected().greedy : Expected().beam;
    for (size_t i = 0; i < texts.size(); ++i) {
      ExpectSame(resp.translations(i), want[i], absl::StrCat("beam ", beam, " text ", i));
      EXPECT_EQ(resp.translations(i).tokens_size(), resp.translations(i).token_ids_size());
      EXPECT_EQ(resp.translations(i).target_token_count(), resp.translations(i).token_ids_size());
    }
  }
}

TEST_F(ServerTest, NBestHypotheses) {
  auto req = Request(TestTexts(2), 4, kMaxLength);
  req.mutable_options()->set_num_hypotheses(3);
  v1::TranslateResponse resp;
  ASSERT_TRUE(Call(stub_.get(), req, &resp).ok());
  for (const auto& t : resp.translations()) {
    ASSERT_EQ(t.hypotheses_size(), 3);
    EXPECT_EQ(t.hypotheses(0).text(), t.text());
    EXPECT_GE(t.hypotheses(0).score(), t.hypotheses(1).score());
  }
}

// 64 concurrent single-text requests of mixed lengths: each caller gets its own answer, equal
// to the unbatched one.
TEST_F(ServerTest, ConcurrentRequestsGetTheirOwnAnswers) {
  const auto texts = TestTexts(64);
  std::vector<v1::TranslateResponse> responses(texts.size());
  std::vector<grpc::Status> statuses(texts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < texts.size(); ++i) {
    threads.emplace_back([&, i] {
      statuses[i] =
          Call(stub_.get(), Request({texts[i]}, i % 3 == 0 ? 4 : 1, kMaxLength), &responses[i]);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_TRUE(statuses[i].ok()) << i << ": " << statuses[i].error_message();
    ASSERT_EQ(responses[i].translations_size(), 1);
    ExpectSame(responses[i].translations(0), i % 3 == 0 ? Expected().beam[i] : Expected().greedy[i],
               absl::StrCat("text ", i));
  }
}

TEST_F(ServerTest, StreamingChunksConcatenateToFinalText) {
  const auto texts = TestTexts(5);
  for (int beam : {1, 4}) {
    grpc::ClientContext ctx;
    auto reader = stub_->TranslateStream(&ctx, Request(texts, beam, kMaxLength));
    std::vector<std::string> joined(texts.size());
    std::vector<int> chunks(texts.size(), 0);
    std::vector<std::optional<v1::Translation>> final(texts.size());
    v1::TranslateStreamResponse chunk;
    while (reader->Read(&chunk)) {
      ASSERT_GE(chunk.index(), 0);
      ASSERT_LT(chunk.index(), static_cast<int>(texts.size()));
      ASSERT_FALSE(final[chunk.index()].has_value()) << "chunk after the final one";
      joined[chunk.index()] += chunk.text_delta();
      ++chunks[chunk.index()];
      if (chunk.done()) final[chunk.index()] = chunk.translation();
    }
    grpc::Status s = reader->Finish();
    ASSERT_TRUE(s.ok()) << s.error_message();
    const auto& want = beam == 1 ? Expected().greedy : Expected().beam;
    for (size_t i = 0; i < texts.size(); ++i) {
      ASSERT_TRUE(final[i].has_value()) << i;
      EXPECT_EQ(joined[i], final[i]->text()) << i;
      ExpectSame(*final[i], want[i], absl::StrCat("stream beam ", beam, " text ", i));
      // Greedy output grows token by token: more than one chunk for a long output.
      if (beam == 1 && want[i].best.ids.size() > 4) {
        EXPECT_GT(chunks[i], 1) << i;
      }
    }
  }
}

TEST_F(ServerTest, ListModels) {
  grpc::ClientContext ctx;
  v1::ListModelsResponse resp;
  ASSERT_TRUE(stub_->ListModels(&ctx, v1::ListModelsRequest(), &resp).ok());
  ASSERT_EQ(resp.models_size(), 1);
  EXPECT_EQ(resp.models(0).name(), "model");
  EXPECT_EQ(resp.models(0).device(), "cpu");
  EXPECT_EQ(resp.models(0).dtype(), "float32");
  EXPECT_TRUE(resp.models(0).is_default());
  EXPECT_NE(resp.models(0).architecture().find("marian"), std::string::npos);
}

TEST_F(ServerTest, ReflectionListsTheService) {
  using Req = transerve::testing::reflwire::ServerReflectionRequest;
  using Resp = transerve::testing::reflwire::ServerReflectionResponse;
  const grpc::internal::RpcMethod kMethod(
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      grpc::internal::RpcMethod::BIDI_STREAMING, channel_);
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReaderWriter<Req, Resp>> rw(
      grpc::internal::ClientReaderWriterFactory<Req, Resp>::Create(channel_.get(), kMethod, &ctx));
  Req q;
  q.set_list_services("");
  ASSERT_TRUE(rw->Write(q));
  rw->WritesDone();
  std::vector<std::string> names;
  Resp r;
  while (rw->Read(&r)) {
    for (const auto& s : r.list_services_response().service()) names.push_back(s.name());
  }
  ASSERT_TRUE(rw->Finish().ok());
  EXPECT_NE(std::find(names.begin(), names.end(), "transerve.v1.Translator"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "grpc.health.v1.Health"), names.end());
}

TEST_F(ServerTest, HealthIsServing) {
  EXPECT_EQ(CheckHealth(channel_.get(), ""), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(CheckHealth(channel_.get(), "transerve.v1.Translator"),
            grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST_F(ServerTest, InvalidRequests) {
  v1::TranslateResponse resp;
  EXPECT_EQ(Call(stub_.get(), Request({}, 1, 8), &resp).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call(stub_.get(), Request({"ok", "bad \xC3\x28 utf8"}, 1, 8), &resp).error_code(),
            StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call(stub_.get(), Request({"x"}, 100, 8), &resp).error_code(),
            StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call(stub_.get(), Request({"x"}, 1, 100000), &resp).error_code(),
            StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call(stub_.get(), Request(std::vector<std::string>(65, "x"), 1, 8), &resp).error_code(),
            StatusCode::INVALID_ARGUMENT);
  // Over the model's positions: refused as one sequence; split (the default), cut into parts.
  std::string long_text;
  for (int i = 0; i < 400; ++i) absl::StrAppend(&long_text, "word", i, " ");
  for (const std::string& text : {std::string(5000, 'a'), long_text}) {
    auto whole = Request({text}, 1, 8);
    whole.mutable_document()->set_split_sentences(false);
    EXPECT_EQ(Call(stub_.get(), whole, &resp).error_code(), StatusCode::INVALID_ARGUMENT);
    ASSERT_TRUE(Call(stub_.get(), Request({text}, 1, 8), &resp).ok());
    EXPECT_GT(resp.translations(0).sentences_size(), 1);
  }
  auto req = Request({"x"}, 1, 8);
  req.mutable_options()->set_num_hypotheses(3);
  EXPECT_EQ(Call(stub_.get(), req, &resp).error_code(), StatusCode::INVALID_ARGUMENT);
}

TEST_F(ServerTest, UnknownModelIsNotFound) {
  auto req = Request({"hello"}, 1, 8);
  req.set_model("no-such-model");
  v1::TranslateResponse resp;
  grpc::Status s = Call(stub_.get(), req, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("model"), std::string::npos);
  req.set_model("model");
  EXPECT_TRUE(Call(stub_.get(), req, &resp).ok());
}

// Alignments of a batched request equal the engine's for each sentence alone, bit for bit,
// and come with the pieces their rows and columns stand for.
TEST_F(ServerTest, AlignmentOfEveryTranslation) {
  const auto texts = TestTexts(kAlignmentTexts);
  for (int beam : {1, 4}) {
    auto req = Request(texts, beam, kMaxLength);
    req.mutable_options()->set_return_alignment(true);
    v1::TranslateResponse resp;
    grpc::Status s = Call(stub_.get(), req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    for (int i = 0; i < kAlignmentTexts; ++i) {
      const Hypothesis& want = (beam == 1 ? Expected().greedy_aligned : Expected().beam_aligned)[i];
      const v1::Translation& t = resp.translations(i);
      ASSERT_TRUE(t.has_alignment()) << i;
      const v1::Alignment& a = t.alignment();
      EXPECT_EQ(a.source_length(), static_cast<int>(Expected().sources[i].size()));
      EXPECT_EQ(a.target_length(), static_cast<int>(want.ids.size()));
      EXPECT_EQ(t.source_token_count(), a.source_length());
      EXPECT_EQ(t.target_token_count(), a.target_length());
      EXPECT_EQ(std::vector<float>(a.weights().begin(), a.weights().end()), want.alignment)
          << "beam " << beam << " text " << i;
      ASSERT_EQ(a.source_tokens_size(), a.source_length());
      ASSERT_EQ(a.target_tokens_size(), a.target_length());
      EXPECT_EQ(a.source_tokens(a.source_length() - 1), "</s>");
      EXPECT_EQ(std::vector<std::string>(a.target_tokens().begin(), a.target_tokens().end()),
                std::vector<std::string>(t.tokens().begin(), t.tokens().end()));
      for (int r = 0; r < a.target_length(); ++r) {
        double sum = 0;
        for (int c = 0; c < a.source_length(); ++c) sum += a.weights(r * a.source_length() + c);
        EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << r;
      }
    }
  }
  // Without the option there is none.
  v1::TranslateResponse plain;
  ASSERT_TRUE(Call(stub_.get(), Request(texts, 1, kMaxLength), &plain).ok());
  EXPECT_FALSE(plain.translations(0).has_alignment());
}

TEST(ServerDeadlineTest, DeadlineExceeded) {
  ServerConfig c = BaseConfig();
  c.scheduler.admission.max_batch_sequences =
      1;  // one sentence at a time: the request takes seconds
  auto server = StartServer(c);
  ASSERT_NE(server, nullptr);
  auto stub = v1::Translator::NewStub(Connect(*server));
  // Long outputs (the random model never stops before max_length) under a short deadline.
  v1::TranslateResponse resp;
  grpc::Status s = Call(stub.get(), Request(TestTexts(64), 8, 255), &resp, 200);
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED);
  // The server itself answered it so (the sentences left the batch at the deadline).
  bool counted = false;
  // Under a loaded machine the server answers when its current decode step ends: allow 10 s.
  for (int i = 0; i < 500 && !counted; ++i) {
    counted =
        server->MetricsText().find(
            R"(transerve_requests_total{code="DEADLINE_EXCEEDED",method="Translate",model="model",protocol="grpc"} 1)") !=
        std::string::npos;
    if (!counted) absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_TRUE(counted) << server->MetricsText();
  // The server is fine afterwards.
  EXPECT_TRUE(Call(stub.get(), Request({"hello"}, 1, 8), &resp).ok());
}

TEST(ServerAuthTest, BearerTokenIsRequiredWhenConfigured) {
  ServerConfig c = BaseConfig();
  c.auth_tokens = {"0ther-token", "s3cret"};
  auto server = StartServer(c);
  ASSERT_NE(server, nullptr);
  auto channel = Connect(*server);
  auto stub = v1::Translator::NewStub(channel);
  v1::TranslateResponse resp;
  EXPECT_EQ(Call(stub.get(), Request({"hello"}, 1, 8), &resp).error_code(),
            StatusCode::UNAUTHENTICATED);
  // Each configured token lets a call in; anything else does not.
  const std::vector<std::pair<std::string, StatusCode>> cases = {
      {"Bearer wrong", StatusCode::UNAUTHENTICATED},
      {"Bearer s3cre", StatusCode::UNAUTHENTICATED},
      {"s3cret", StatusCode::UNAUTHENTICATED},
      {"Bearer s3cret", StatusCode::OK},
      {"Bearer 0ther-token", StatusCode::OK}};
  for (const auto& [token, want] : cases) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", token);
    EXPECT_EQ(stub->Translate(&ctx, Request({"hello"}, 1, 8), &resp).error_code(), want) << token;
  }
  // Health stays open for load balancers.
  EXPECT_EQ(CheckHealth(channel.get(), ""), grpc::health::v1::HealthCheckResponse::SERVING);
}

// A GPU lost for good (a CUDA "sticky" error): every call is answered UNAVAILABLE, and health
// turns NOT_SERVING and stays so, for probes to move traffic away or restart the process. Needs
// the CUDA emulator, which can break its device (ctest entry server_emulated_gpu).
TEST(ServerDeviceLostTest, HealthTurnsNotServingAndEveryCallIsUnavailable) {
  if (std::getenv("TRANSERVE_CUDA_PLUGIN") == nullptr || ProbeCuda().devices == 0) {
    GTEST_SKIP() << "breaking the device needs the CUDA emulator (TRANSERVE_CUDA_PLUGIN)";
  }
  const auto break_device = testing::EmulatorHook<void (*)(int)>("transerve_emulator_break_device");
  if (break_device == nullptr) GTEST_SKIP() << "the CUDA plugin loaded is not the emulator";
  ServerConfig c = BaseConfig();
  c.device = "cuda";
  c.dtype = "float32";
  auto server = testing::StartServer(c);  // without the engine's reference answers: not needed
  ASSERT_NE(server, nullptr);
  auto channel = Connect(*server);
  auto stub = v1::Translator::NewStub(channel);
  using HS = grpc::health::v1::HealthCheckResponse;
  v1::TranslateResponse resp;
  ASSERT_TRUE(Call(stub.get(), Request({"the house is small"}, 2, 8), &resp).ok());
  EXPECT_EQ(CheckHealth(channel.get(), ""), HS::SERVING);

  break_device(700);  // cudaErrorIllegalAddress
  const grpc::Status lost = Call(stub.get(), Request({"the house is small"}, 2, 8), &resp);
  EXPECT_EQ(lost.error_code(), StatusCode::UNAVAILABLE) << lost.error_message();
  EXPECT_NE(lost.error_message().find("GPU failed"), std::string::npos) << lost.error_message();
  // The server notices within its gauges' refresh (250 ms).
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (CheckHealth(channel.get(), "transerve.v1.Translator") != HS::NOT_SERVING &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(CheckHealth(channel.get(), "transerve.v1.Translator"), HS::NOT_SERVING);
  EXPECT_EQ(CheckHealth(channel.get(), ""), HS::NOT_SERVING);
  const grpc::Status later = Call(stub.get(), Request({"we are green"}, 1, 8), &resp);
  EXPECT_EQ(later.error_code(), StatusCode::UNAVAILABLE) << later.error_message();
  break_device(0);  // the emulator's device mends, unlike a GPU: health stays NOT_SERVING
  absl::SleepFor(absl::Milliseconds(600));
  EXPECT_EQ(CheckHealth(channel.get(), ""), HS::NOT_SERVING);
}

TEST(ServerQueueTest, FullQueueIsResourceExhausted) {
  ServerConfig c = BaseConfig();
  c.scheduler.max_queue = 2;
  c.scheduler.admission.max_batch_sequences = 1;
  auto server = StartServer(c);
  ASSERT_NE(server, nullptr);
  auto stub = v1::Translator::NewStub(Connect(*server));
  v1::TranslateResponse resp;
  // More sentences than the queue holds, in one all-or-nothing submission.
  grpc::Status s = Call(stub.get(), Request(TestTexts(3), 1, 8), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_TRUE(Call(stub.get(), Request(TestTexts(2), 1, 8), &resp).ok());
}

TEST(ServerModesTest, StaticAndContinuousGiveIdenticalOutputs) {
  ServerConfig c = BaseConfig();
  c.scheduler.admission.mode = BatchingMode::kStatic;
  auto server = StartServer(c);
  ASSERT_NE(server, nullptr);
  auto stub = v1::Translator::NewStub(Connect(*server));
  const auto texts = TestTexts(24);
  std::vector<v1::TranslateResponse> responses(texts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < texts.size(); ++i) {
    threads.emplace_back([&, i] {
      EXPECT_TRUE(Call(stub.get(), Request({texts[i]}, 1, kMaxLength), &responses[i]).ok());
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_EQ(responses[i].translations_size(), 1);
    ExpectSame(responses[i].translations(0), Expected().greedy[i], absl::StrCat("static ", i));
  }
}

TEST(ServerLifecycleTest, HealthDuringStartUpAndDrain) {
  ServerConfig c = BaseConfig();
  c.scheduler.admission.max_batch_sequences =
      1;  // one sentence at a time: the long request stays long
  auto server = StartServer(c, /*load=*/false);
  ASSERT_NE(server, nullptr);
  auto channel = Connect(*server);
  auto stub = v1::Translator::NewStub(channel);
  using HS = grpc::health::v1::HealthCheckResponse;
  EXPECT_EQ(CheckHealth(channel.get(), ""), HS::NOT_SERVING);
  EXPECT_EQ(CheckHealth(channel.get(), "transerve.v1.Translator"), HS::NOT_SERVING);
  v1::TranslateResponse resp;
  EXPECT_EQ(Call(stub.get(), Request({"hello"}, 1, 8), &resp).error_code(),
            StatusCode::UNAVAILABLE);

  ASSERT_TRUE(server->LoadModels().ok());
  EXPECT_EQ(CheckHealth(channel.get(), ""), HS::SERVING);
  EXPECT_EQ(CheckHealth(channel.get(), "transerve.v1.Translator"), HS::SERVING);

  // A long request in flight while the server drains: it completes; health stops saying SERVING;
  // a new connection is refused; a call on the open channel is refused (UNAVAILABLE), served
  // (gRPC let it in before closing), or, when it lands in the instant between the start of gRPC's
  // shutdown and the client reading its GOAWAY, CANCELLED by gRPC 1.51 itself (docs/server.md).
  std::atomic<bool> long_done{false};
  grpc::Status long_status;
  v1::TranslateResponse long_resp;
  std::thread in_flight([&] {
    long_status = Call(stub.get(), Request(TestTexts(64), 4, 255), &long_resp);
    long_done.store(true);
  });
  ASSERT_TRUE(WaitUntilDecoding(*server));
  std::thread drainer([&] { EXPECT_TRUE(server->Drain(absl::Seconds(60)).ok()); });
  bool saw_not_serving = false;
  bool saw_refused_connection = false;
  std::set<StatusCode> open_channel_codes;
  while (!long_done.load() && !(saw_not_serving && saw_refused_connection)) {
    if (!saw_not_serving) {
      saw_not_serving = CheckHealth(channel.get(), "transerve.v1.Translator") != HS::SERVING;
      continue;
    }
    open_channel_codes.insert(Call(stub.get(), Request({"hello"}, 1, 8), &resp).error_code());
    auto fresh = v1::Translator::NewStub(Connect(*server));
    saw_refused_connection =
        Call(fresh.get(), Request({"hello"}, 1, 8), &resp).error_code() == StatusCode::UNAVAILABLE;
  }
  in_flight.join();
  drainer.join();
  EXPECT_TRUE(saw_not_serving) << "the in-flight request ended before health could be seen";
  EXPECT_TRUE(saw_refused_connection);
  for (StatusCode code : open_channel_codes) {
    EXPECT_TRUE(code == StatusCode::OK || code == StatusCode::UNAVAILABLE ||
                code == StatusCode::CANCELLED)
        << code;
  }
  EXPECT_TRUE(long_status.ok()) << long_status.error_message();
  EXPECT_EQ(long_resp.translations_size(), 64);
}

TEST(ServerModelsTest, ServesSeveralModelsByDirectoryName) {
  // Both fixtures live in directories called "model": serve them under distinct names.
  const std::string dir = ::testing::TempDir() + "/transerve_models";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::create_directory_symlink(ModelDir(), dir + "/first");
  std::filesystem::create_directory_symlink(
      testing::SourceDir() + "/tests/fixtures/tiny-marian-variant/model", dir + "/second");
  ServerConfig c = BaseConfig();
  c.model_dirs = {dir + "/first", dir + "/second/"};
  auto server = StartServer(c);
  ASSERT_NE(server, nullptr);
  auto stub = v1::Translator::NewStub(Connect(*server));
  grpc::ClientContext ctx;
  v1::ListModelsResponse models;
  ASSERT_TRUE(stub->ListModels(&ctx, v1::ListModelsRequest(), &models).ok());
  ASSERT_EQ(models.models_size(), 2);
  EXPECT_EQ(models.models(0).name(), "first");
  EXPECT_TRUE(models.models(0).is_default());
  EXPECT_EQ(models.models(1).name(), "second");
  EXPECT_FALSE(models.models(1).is_default());

  const auto texts = TestTexts(3);
  v1::TranslateResponse by_default, first, second;
  ASSERT_TRUE(Call(stub.get(), Request(texts, 1, kMaxLength), &by_default).ok());
  auto req = Request(texts, 1, kMaxLength);
  req.set_model("first");
  ASSERT_TRUE(Call(stub.get(), req, &first).ok());
  req.set_model("second");
  ASSERT_TRUE(Call(stub.get(), req, &second).ok());
  EXPECT_EQ(by_default.model(), "first");
  EXPECT_EQ(second.model(), "second");
  for (size_t i = 0; i < texts.size(); ++i) {
    ExpectSame(by_default.translations(i), Expected().greedy[i], "default");
    ExpectSame(first.translations(i), Expected().greedy[i], "first");
  }
  EXPECT_NE(second.translations(0).token_ids_size() == first.translations(0).token_ids_size() &&
                second.translations(0).text() == first.translations(0).text(),
            true)
      << "the second model answered like the first";
  server.reset();
  std::filesystem::remove_all(dir);
}

TEST(ServerCancelTest, CancelledCallIsAnsweredCancelledAndFreesTheBatch) {
  ServerConfig c = BaseConfig();
  c.scheduler.admission.max_batch_sequences =
      1;  // one sentence at a time: the request outlasts 30 ms
  auto server = StartServer(c);
  ASSERT_NE(server, nullptr);
  auto stub = v1::Translator::NewStub(Connect(*server));
  grpc::ClientContext ctx;
  v1::TranslateResponse resp;
  std::thread canceller([&] {
    EXPECT_TRUE(WaitUntilDecoding(*server));
    ctx.TryCancel();
  });
  grpc::Status s = stub->Translate(&ctx, Request(TestTexts(64), 4, 255), &resp);
  canceller.join();
  EXPECT_EQ(s.error_code(), StatusCode::CANCELLED);
  // The server answers the cancelled call (CANCELLED in its metrics) and stays usable.
  EXPECT_TRUE(Call(stub.get(), Request({"hello"}, 1, 8), &resp).ok());
  bool counted = false;
  // Under a loaded machine the server answers when its current decode step ends: allow 10 s.
  for (int i = 0; i < 500 && !counted; ++i) {
    counted =
        server->MetricsText().find(
            R"(transerve_requests_total{code="CANCELLED",method="Translate",model="model",protocol="grpc"} 1)") !=
        std::string::npos;
    if (!counted) absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_TRUE(counted);
}

TEST(ServerMetricsTest, CountsMatchRequests) {
  ServerConfig c = BaseConfig();
  c.kv_cache_bytes = int64_t{3} << 20;
  auto server = StartServer(c);
  ASSERT_NE(server, nullptr);
  auto stub = v1::Translator::NewStub(Connect(*server));
  v1::TranslateResponse resp;
  int64_t generated = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Call(stub.get(), Request(TestTexts(2), 1, 8), &resp).ok());
    for (const auto& t : resp.translations()) generated += t.token_ids_size();
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(Call(stub.get(), Request({}, 1, 8), &resp).error_code(),
              StatusCode::INVALID_ARGUMENT);
  }
  auto bad = Request({"x"}, 1, 8);
  bad.set_model("nope");
  EXPECT_EQ(Call(stub.get(), bad, &resp).error_code(), StatusCode::NOT_FOUND);
  const std::string text = server->MetricsText();
  EXPECT_EQ(
      Sample(
          text,
          R"(transerve_requests_total{code="OK",method="Translate",model="model",protocol="grpc"})"),
      3);
  EXPECT_EQ(
      Sample(
          text,
          R"(transerve_requests_total{code="INVALID_ARGUMENT",method="Translate",model="model",protocol="grpc"})"),
      2);
  EXPECT_EQ(
      Sample(
          text,
          R"(transerve_requests_total{code="NOT_FOUND",method="Translate",model="",protocol="grpc"})"),
      1);
  // Every answered request is timed, errors included (the unknown model under model="").
  EXPECT_EQ(
      Sample(
          text,
          R"(transerve_request_duration_seconds_count{method="Translate",model="model",protocol="grpc"})"),
      5);
  EXPECT_EQ(
      Sample(
          text,
          R"(transerve_request_duration_seconds_count{method="Translate",model="",protocol="grpc"})"),
      1);
  EXPECT_EQ(Sample(text, R"(transerve_generated_tokens_total{model="model"})"), generated);
  EXPECT_GT(Sample(text, R"(transerve_source_tokens_total{model="model"})"), 0);
  EXPECT_GE(Sample(text, R"(transerve_batch_sequences_count{model="model"})"), 1);
  EXPECT_TRUE(std::regex_search(
      text,
      std::regex(
          R"(\ntranserve_model_info\{architecture="marian[^"]*",device="cpu",dtype="float32",model="model",replicas="1"\} 1\n)")))
      << text;
  EXPECT_NE(text.find("transerve_queue_wait_seconds_bucket"), std::string::npos);
  EXPECT_NE(text.find("transerve_time_to_first_token_seconds_bucket"), std::string::npos);
  EXPECT_NE(text.find("transerve_kv_cache_bytes{model=\"model\"}"), std::string::npos);
  EXPECT_EQ(Sample(text, R"(transerve_kv_cache_capacity_bytes{model="model"})"), 3 << 20);
  EXPECT_NE(text.find("transerve_queue_depth{model=\"model\"}"), std::string::npos);
  EXPECT_NE(text.find("transerve_active_sequences{model=\"model\"}"), std::string::npos);
  EXPECT_NE(text.find("transerve_batch_padding_ratio_bucket"), std::string::npos);
}

}  // namespace
}  // namespace transerve
