// Hostile and degenerate input through real gRPC (issue 8): every request gets exactly one
// answer with the status the contract names (docs/architecture.md section 4), and the server
// keeps serving afterwards: its sentences and KV cache return to zero and a normal request
// still succeeds.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "tests/server/test_server.h"
#include "tests/testing/tcp_proxy.h"
#include "transerve/v1/translator.grpc.pb.h"

namespace transerve {
namespace {

using grpc::StatusCode;
using testing::Answered;
using testing::BaseConfig;
using testing::Call;
using testing::Connect;
using testing::Request;
using testing::Sample;
using testing::StartServer;

// Waits until nothing is queued or decoding and the KV cache is empty again (the server answers
// a call before it has quite finished tidying up after it).
bool Settles(TranserveServer& server) {
  for (int i = 0; i < 500; ++i) {
    const std::string m = server.MetricsText();
    if (Sample(m, R"(transerve_active_sequences{model="model"})") == 0 &&
        Sample(m, R"(transerve_queue_depth{model="model"})") == 0 &&
        Sample(m, R"(transerve_kv_cache_bytes{model="model"})") == 0) {
      return true;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

// The server still translates a plain request.
void ExpectStillServing(v1::Translator::Stub* stub) {
  v1::TranslateResponse resp;
  grpc::Status s = Call(stub, Request({"the house is small"}, 1, 8), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.translations_size(), 1);
  EXPECT_GT(resp.translations(0).target_token_count(), 0);
}

class HostileInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ServerConfig c = BaseConfig();
    c.max_message_bytes = 1 << 20;
    c.limits.max_texts = 16;
    c.limits.max_text_chars = 300;
    c.limits.max_source_tokens = 40;
    server_ = StartServer(c).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    stub_ = v1::Translator::NewStub(Connect(*server_));
  }
  void TearDown() override {
    EXPECT_TRUE(Settles(*server_)) << "work or KV cache left behind";
    ExpectStillServing(stub_.get());
  }
  // The status of one unary call, and its message.
  grpc::Status Translate(const v1::TranslateRequest& req, v1::TranslateResponse* resp = nullptr) {
    v1::TranslateResponse ignored;
    return Call(stub_.get(), req, resp != nullptr ? resp : &ignored);
  }

  static TranserveServer* server_;
  std::unique_ptr<v1::Translator::Stub> stub_;
};
TranserveServer* HostileInputTest::server_ = nullptr;

TEST_F(HostileInputTest, EmptyListIsInvalidArgument) {
  grpc::Status s = Translate(Request({}, 1, 8));
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("empty"), std::string::npos) << s.error_message();
}

// An empty or blank text comes back as it is (its whitespace is layout) without running the
// model: no sentences, no tokens, in both methods, next to normal texts that are translated.
TEST_F(HostileInputTest, EmptyAndBlankTextsComeBackAsTheyAreWithoutTheModel) {
  const std::vector<std::string> texts = {"", "the house is small", "   ", "\t \n"};
  for (int beam : {1, 4}) {
    v1::TranslateResponse resp;
    auto req = Request(texts, beam, 16);
    req.mutable_options()->set_return_alignment(true);
    grpc::Status s = Translate(req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(resp.translations_size(), 4);
    for (int i : {0, 2, 3}) {
      const v1::Translation& t = resp.translations(i);
      EXPECT_EQ(t.text(), texts[i]) << "text " << i << " beam " << beam;
      EXPECT_EQ(t.sentences_size(), 0);
      EXPECT_EQ(t.token_ids_size(), 0);
      EXPECT_EQ(t.score(), 0.0f);
      EXPECT_EQ(t.confidence(), 0.0f);
      EXPECT_EQ(t.source_token_count(), 0);
      EXPECT_EQ(t.target_token_count(), 0);
    }
    EXPECT_GT(resp.translations(1).target_token_count(), 1);
    EXPECT_EQ(resp.translations(1).sentences_size(), 1);
  }
  // Streamed: one final chunk per empty text, carrying the text as it is.
  grpc::ClientContext ctx;
  auto reader = stub_->TranslateStream(&ctx, Request({"", " "}, 1, 8));
  v1::TranslateStreamResponse msg;
  std::vector<int> done(2, 0);
  while (reader->Read(&msg)) {
    ASSERT_TRUE(msg.done());
    const std::string expected = msg.index() == 0 ? "" : " ";
    EXPECT_EQ(msg.text_delta(), expected);
    EXPECT_EQ(msg.translation().text(), expected);
    ++done.at(static_cast<size_t>(msg.index()));
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(done, std::vector<int>({1, 1}));
}

TEST_F(HostileInputTest, TextOverEveryLimitIsInvalidArgument) {
  struct Case {
    std::string what;
    v1::TranslateRequest request;
    std::string message;  // a word the error must contain
  };
  std::string many_words;
  for (int i = 0; i < 60; ++i) absl::StrAppend(&many_words, "w", i, " ");  // < 300 characters
  std::string two_byte_chars;  // 301 characters in 602 bytes: over, however bytes count
  for (int i = 0; i < 301; ++i) two_byte_chars += "\xC3\xA4";
  // Over the token limit is an error only as one sequence (sentence splitting off); split, a
  // sentence that long is cut into parts (below).
  auto whole = Request({many_words}, 1, 8);
  whole.mutable_document()->set_split_sentences(false);
  const std::vector<Case> cases = {
      {"characters", Request({std::string(301, 'a')}, 1, 8), "characters"},
      {"two-byte characters", Request({two_byte_chars}, 1, 8), "characters"},
      {"tokens", whole, "tokens"},
      {"texts", Request(std::vector<std::string>(17, "a"), 1, 8), "texts"},
      {"one big text among small ones", Request({"a", "b", std::string(5000, 'x')}, 1, 8),
       "texts[2]"},
  };
  for (const Case& c : cases) {
    grpc::Status s = Translate(c.request);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << c.what;
    EXPECT_NE(s.error_message().find(c.message), std::string::npos)
        << c.what << ": " << s.error_message();
  }
  // What the caller asks for explicitly: truncation to the token limit.
  auto truncated = whole;
  truncated.mutable_options()->set_truncate(true);
  v1::TranslateResponse resp;
  ASSERT_TRUE(Translate(truncated, &resp).ok());
  EXPECT_EQ(resp.translations(0).source_token_count(), 40);
  // Split (the default): cut at safe points, every part within the limit, nothing dropped.
  ASSERT_TRUE(Translate(Request({many_words}, 1, 8), &resp).ok());
  const v1::Translation& cut = resp.translations(0);
  EXPECT_GT(cut.sentences_size(), 1);
  std::string rejoined;
  int tokens = 0;
  for (const auto& part : cut.sentences()) {
    EXPECT_LE(part.source_token_count(), 40);
    tokens += part.source_token_count();
    rejoined += (rejoined.empty() ? "" : " ") + part.source();
  }
  EXPECT_EQ(rejoined + " ", many_words);
  EXPECT_EQ(cut.source_token_count(), tokens);
}

TEST_F(HostileInputTest, InvalidUtf8IsInvalidArgumentWhereverItIs) {
  const std::vector<std::string> bad = {
      "\xff",                     // never valid
      "caf\xC3",                  // cut in the middle of a character
      "\x80 continuation first",  // a continuation byte alone
      "\xC0\xAF",                 // overlong encoding of '/'
      "\xE0\x80\xAF",             // overlong, three bytes
      "\xED\xA0\x80",             // a UTF-16 surrogate
      "\xF4\x90\x80\x80",         // beyond U+10FFFF
      "ok \xF8\x88\x80\x80\x80",  // five-byte form
  };
  for (const std::string& text : bad) {
    grpc::Status s = Translate(Request({"fine", text}, 1, 8));
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << absl::CEscape(text);
    EXPECT_NE(s.error_message().find("texts[1] is not valid UTF-8"), std::string::npos)
        << s.error_message();
  }
}

// NUL, C0/C1 controls, escape sequences, bidi overrides, zero-width and non-characters are valid
// text: translated (OK), one translation each, never an error or a crash. A text with no letter
// or digit at all is layout and comes back as it is.
TEST_F(HostileInputTest, NulBytesAndControlCharactersAreTranslated) {
  const std::vector<std::string> texts = {
      std::string("a\0b", 3),
      std::string(5, '\0'),
      "\x01\x02\x03\x07\x08\x0b\x0c\x0e\x1f\x7f",
      "\x1b[31mred\x1b[0m",
      "line\r\nbreak\ttab",
      "\xC2\x80\xC2\x9F C1 controls",
      "\xE2\x80\xAE reversed \xE2\x80\xAC",  // RLO ... PDF
      "\xE2\x80\x8B\xEF\xBB\xBF zero width",
      "\xEF\xBF\xBF\xEF\xBF\xBE non-characters",
      "\xF0\x9F\x98\x80\xF0\x9F\x98\x80",  // emoji
  };
  for (int beam : {1, 4}) {
    v1::TranslateResponse resp;
    grpc::Status s = Translate(Request(texts, beam, 12), &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(resp.translations_size(), static_cast<int>(texts.size()));
    for (int i = 0; i < resp.translations_size(); ++i) {
      const v1::Translation& t = resp.translations(i);
      if (t.sentences_size() == 0) EXPECT_EQ(t.text(), texts[i]) << i;
      for (const auto& sentence : t.sentences()) {
        EXPECT_GE(sentence.target_token_count(), 1);
        EXPECT_LE(sentence.target_token_count(), 12);
      }
    }
    // Those with letters are translated.
    EXPECT_GE(resp.translations(3).sentences_size(), 1);
    EXPECT_GE(resp.translations(4).sentences_size(), 2);
  }
}

TEST_F(HostileInputTest, HugeNumbersOfTextsAreRefusedBeforeAnyWork) {
  // 200,000 texts in one message (under the 1 MiB message limit).
  v1::TranslateRequest req;
  for (int i = 0; i < 200000; ++i) req.add_texts("a");
  ASSERT_LT(req.ByteSizeLong(), size_t{1} << 20);
  grpc::Status s = Translate(req);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("200000 texts"), std::string::npos) << s.error_message();
}

TEST_F(HostileInputTest, OptionsOutOfRangeAreInvalidArgument) {
  struct Case {
    std::string what;
    std::function<void(v1::DecodingOptions*)> set;
  };
  const std::vector<Case> cases = {
      {"negative beam", [](auto* o) { o->set_beam_size(-1); }},
      {"beam over the limit", [](auto* o) { o->set_beam_size(9); }},
      {"beam INT_MAX", [](auto* o) { o->set_beam_size(std::numeric_limits<int32_t>::max()); }},
      {"beam INT_MIN", [](auto* o) { o->set_beam_size(std::numeric_limits<int32_t>::min()); }},
      {"negative max_length", [](auto* o) { o->set_max_length(-5); }},
      {"max_length over the limit", [](auto* o) { o->set_max_length(100000); }},
      {"negative min_length", [](auto* o) { o->set_min_length(-1); }},
      {"min_length over max_length",
       [](auto* o) {
         o->set_max_length(8);
         o->set_min_length(9);
       }},
      {"n-best over the beam",
       [](auto* o) {
         o->set_beam_size(2);
         o->set_num_hypotheses(3);
       }},
      {"negative n-best", [](auto* o) { o->set_num_hypotheses(-3); }},
      {"NaN length penalty",
       [](auto* o) { o->set_length_penalty(std::numeric_limits<float>::quiet_NaN()); }},
      {"infinite length penalty",
       [](auto* o) { o->set_length_penalty(std::numeric_limits<float>::infinity()); }},
  };
  for (const Case& c : cases) {
    v1::TranslateRequest req;
    req.add_texts("hello");
    req.mutable_options()->set_max_length(8);
    c.set(req.mutable_options());
    grpc::Status s = Translate(req);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << c.what;
    EXPECT_FALSE(s.error_message().empty()) << c.what;
    grpc::ClientContext ctx;
    auto reader = stub_->TranslateStream(&ctx, req);
    v1::TranslateStreamResponse msg;
    EXPECT_FALSE(reader->Read(&msg)) << c.what;
    EXPECT_EQ(reader->Finish().error_code(), StatusCode::INVALID_ARGUMENT) << c.what;
  }
}

TEST_F(HostileInputTest, UnknownModelIsNotFoundAndNamesTheServedOnes) {
  for (const std::string& name :
       std::vector<std::string>{"no-such-model", "../../etc/passwd", std::string(10000, 'm'),
                                std::string("mo\0del", 6)}) {
    auto req = Request({"hello"}, 1, 8);
    req.set_model(name);
    grpc::Status s = Translate(req);
    EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND);
    EXPECT_NE(s.error_message().find("this server serves: model"), std::string::npos)
        << s.error_message().substr(0, 200);
  }
}

// A 1 ms deadline: DEADLINE_EXCEEDED, answered within the deadline by the server or the client's
// own timer, never an answer that arrives late; the work leaves the server either way.
TEST_F(HostileInputTest, OneMillisecondDeadlineIsDeadlineExceeded) {
  const double expired_before = Answered(*server_, "Translate", "DEADLINE_EXCEEDED");
  const double ok_before = Answered(*server_, "Translate", "OK");
  std::vector<std::string> texts(16, "the house is small and green and we walk through the city");
  for (int i = 0; i < 20; ++i) {
    v1::TranslateResponse resp;
    const absl::Time start = absl::Now();
    grpc::Status s = Call(stub_.get(), Request(texts, 4, 200), &resp, /*timeout_ms=*/1);
    const absl::Duration took = absl::Now() - start;
    EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED);
    // The client stops waiting at the deadline; allow a loaded machine's scheduling slack.
    EXPECT_LT(took, absl::Milliseconds(500));
  }
  // The calls the server saw are answered DEADLINE_EXCEEDED by the server too (some may have
  // expired before reaching it): none ran to the end.
  EXPECT_TRUE(Settles(*server_));
  EXPECT_EQ(Answered(*server_, "Translate", "OK"), ok_before);
  const double expired = Answered(*server_, "Translate", "DEADLINE_EXCEEDED") - expired_before;
  EXPECT_LE(expired, 20);
}

// A message over the server's limit (1 MiB here) is refused by gRPC with RESOURCE_EXHAUSTED
// before the service sees it.
TEST_F(HostileInputTest, MessageOverTheSizeLimitIsResourceExhausted) {
  v1::TranslateRequest req;
  req.add_texts(std::string((1 << 20) + 1024, 'a'));
  grpc::Status s = Translate(req);
  EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  grpc::ClientContext ctx;
  auto reader = stub_->TranslateStream(&ctx, req);
  v1::TranslateStreamResponse msg;
  EXPECT_FALSE(reader->Read(&msg));
  EXPECT_EQ(reader->Finish().error_code(), StatusCode::RESOURCE_EXHAUSTED);
}

// Bytes that are not a TranslateRequest at all (random, from a fixed seed so a failure
// reproduces). A message that happens to parse (every field is optional) is answered by the
// service like any other; one that does not never reaches it: gRPC 1.51's callback API answers it
// UNIMPLEMENTED with no message (its reply to a failed deserialisation, SECURITY.md).
TEST_F(HostileInputTest, GarbageBytesAreAnsweredAndNeverReachTheServiceUnparsed) {
  auto channel = Connect(*server_);
  grpc::GenericStub generic(channel);
  std::mt19937 rng(20261130);
  std::map<StatusCode, int> codes;
  for (int i = 0; i < 50; ++i) {
    std::string bytes(1 + rng() % 300, '\0');
    for (char& b : bytes) b = static_cast<char>(rng());
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    absl::Mutex mu;
    bool done = false;
    grpc::Status status;
    generic.UnaryCall(&ctx, "/transerve.v1.Translator/Translate", grpc::StubOptions(), &request,
                      &response, [&](grpc::Status s) {
                        absl::MutexLock lock(&mu);
                        status = std::move(s);
                        done = true;
                      });
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(&done));
    ++codes[status.error_code()];
    v1::TranslateRequest parsed;
    if (parsed.ParseFromString(bytes)) {
      EXPECT_NE(status.error_code(), StatusCode::UNIMPLEMENTED) << "a valid message was refused";
    } else {
      EXPECT_EQ(status.error_code(), StatusCode::UNIMPLEMENTED) << status.error_message();
    }
  }
  EXPECT_GT(codes[StatusCode::UNIMPLEMENTED], 0) << "no random message failed to parse";
}

// A client that vanishes (its TCP connection closes, no HTTP/2 goodbye) in the middle of a
// stream: the server stops the work, answers the call CANCELLED in its metrics and frees the
// sentences and their KV cache.
TEST(HostileClientTest, ClientDisconnectingMidStreamFreesItsWork) {
  // One sentence at a time, each forced to 255 tokens with beam 4: the first chunk (sentence 0,
  // final) comes long before the other 15 are done, so the client leaves mid-stream.
  ServerConfig c = BaseConfig();
  c.scheduler.admission.max_batch_sequences = 1;
  auto server = StartServer(c);
  ASSERT_NE(server, nullptr);
  testing::TcpProxy proxy(server->port());
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", proxy.port()),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::Translator::NewStub(channel);
  grpc::ClientContext ctx;
  auto request = Request(std::vector<std::string>(16, "x y z"), 4, 255);
  request.mutable_options()->set_min_length(255);
  auto reader = stub->TranslateStream(&ctx, request);
  v1::TranslateStreamResponse msg;
  ASSERT_TRUE(reader->Read(&msg)) << "no first chunk";
  proxy.Disconnect();
  int more = 0;
  while (reader->Read(&msg)) ++more;
  EXPECT_EQ(reader->Finish().error_code(), StatusCode::UNAVAILABLE)
      << "the stream ended before the client left (" << more << " more chunks)";
  bool counted = false;
  for (int i = 0; i < 500 && !counted; ++i) {
    counted = Answered(*server, "TranslateStream", "CANCELLED") == 1;
    if (!counted) absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_TRUE(counted) << "the server did not see the client go";
  EXPECT_TRUE(Settles(*server)) << "work or KV cache left behind";
  auto direct = v1::Translator::NewStub(Connect(*server));
  ExpectStillServing(direct.get());
}

// 1,000 streams open at once on one connection (HTTP/2 multiplexing): every one gets all of its
// chunks and finishes OK with the text of its own request.
TEST_F(HostileInputTest, AThousandConcurrentStreamsAllFinish) {
  constexpr int kStreams = 1000;
  struct Stream final : grpc::ClientReadReactor<v1::TranslateStreamResponse> {
    grpc::ClientContext ctx;
    v1::TranslateRequest request;
    v1::TranslateStreamResponse msg;
    std::string text;
    std::string final_text;
    grpc::Status status;
    absl::Mutex* mu = nullptr;
    int* finished = nullptr;
    void OnReadDone(bool ok) override {
      if (!ok) return;
      text += msg.text_delta();
      if (msg.done()) final_text = msg.translation().text();
      StartRead(&msg);
    }
    void OnDone(const grpc::Status& s) override {
      status = s;
      absl::MutexLock lock(mu);
      ++*finished;
    }
  };
  absl::Mutex mu;
  int finished = 0;
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < kStreams; ++i) {
    auto s = std::make_unique<Stream>();
    s->request = Request({absl::StrCat("stream ", i, " says hello")}, 1, 6);
    s->mu = &mu;
    s->finished = &finished;
    s->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
    stub_->async()->TranslateStream(&s->ctx, &s->request, s.get());
    s->StartRead(&s->msg);
    s->StartCall();
    streams.push_back(std::move(s));
  }
  {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(
        +[](int* n) { return *n == kStreams; }, &finished));
  }
  // Each answer is the engine's answer to that stream's own text (a unary call of the same).
  int ok = 0;
  for (int i = 0; i < kStreams; ++i) {
    const Stream& s = *streams[i];
    ok += s.status.ok();
    EXPECT_EQ(s.text, s.final_text) << "stream " << i;
    if (i % 100 == 0) {
      v1::TranslateResponse resp;
      ASSERT_TRUE(Translate(s.request, &resp).ok());
      EXPECT_EQ(s.final_text, resp.translations(0).text()) << "stream " << i;
    }
  }
  EXPECT_EQ(ok, kStreams);
}

}  // namespace
}  // namespace transerve
