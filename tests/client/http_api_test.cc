// The HTTP front end's APIs as the load generator speaks them, without a server: request bodies
// (proto3 JSON's lowerCamelCase for v1, LibreTranslate's q/source/target), answers counted, HTTP
// failures mapped to gRPC's status codes, and server-sent events split however the bytes
// arrive.
#include "client/loadgen/http_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace transerve {
namespace {

using nlohmann::json;

std::mt19937& Rng() {
  static std::mt19937 rng(std::random_device{}());
  return rng;
}
int RandomInt(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(Rng()); }
std::string RandomWord() {
  std::string w;
  for (int i = RandomInt(3, 9); i > 0; --i) w += static_cast<char>('a' + RandomInt(0, 25));
  return w;
}

TEST(HttpApi, NamesParseAndOthersAreRefused) {
  EXPECT_EQ(*ParseHttpApi("v1"), HttpApi::kV1);
  EXPECT_EQ(*ParseHttpApi("libretranslate"), HttpApi::kLibreTranslate);
  const auto bad = ParseHttpApi("grpc");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("grpc"), std::string::npos);
}

TEST(HttpApi, Paths) {
  EXPECT_EQ(TranslatePath(HttpApi::kV1, false), "/v1/translate");
  EXPECT_EQ(TranslatePath(HttpApi::kV1, true), "/v1/translate/stream");
  EXPECT_EQ(TranslatePath(HttpApi::kLibreTranslate, false), "/translate");
}

TEST(HttpApi, V1BodyIsProto3JsonInLowerCamelCase) {
  v1::TranslateRequest request;
  const std::vector<std::string> texts = {RandomWord(), RandomWord() + " " + RandomWord()};
  for (const auto& t : texts) request.add_texts(t);
  const std::string model = RandomWord();
  const int beam = RandomInt(2, 8), max_length = RandomInt(10, 200);
  request.set_model(model);
  request.mutable_options()->set_beam_size(beam);
  request.mutable_options()->set_max_length(max_length);
  const json j = json::parse(RequestBody(HttpApi::kV1, request, "en", "de"));
  EXPECT_EQ(j["texts"], json(texts));
  EXPECT_EQ(j["model"], model);
  EXPECT_EQ(j["options"]["beamSize"], beam);
  EXPECT_EQ(j["options"]["maxLength"], max_length);
  EXPECT_FALSE(j["options"].contains("beam_size"));
  EXPECT_FALSE(j.contains("sourceLanguage"));  // defaults are left out
}

TEST(HttpApi, LibreBodyCarriesOneTextAsAStringSeveralAsAnArray) {
  v1::TranslateRequest request;
  const std::string first = RandomWord();
  request.add_texts(first);
  request.set_model(RandomWord());  // LibreTranslate has no model field
  json j = json::parse(RequestBody(HttpApi::kLibreTranslate, request, "fr", "es"));
  EXPECT_EQ(j, (json{{"q", first}, {"source", "fr"}, {"target", "es"}}));
  const std::string second = RandomWord();
  request.add_texts(second);
  j = json::parse(RequestBody(HttpApi::kLibreTranslate, request, "en", "de"));
  EXPECT_EQ(j["q"], json({first, second}));
}

TEST(HttpApi, V1AnswerCountsTranslationsAndTokens) {
  json translations = json::array();
  int64_t source = 0, target = 0;
  const int n = RandomInt(1, 5);
  for (int i = 0; i < n; ++i) {
    const int s = RandomInt(1, 50), t = RandomInt(1, 50);
    source += s;
    target += t;
    translations.push_back(
        {{"text", RandomWord()}, {"sourceTokenCount", s}, {"targetTokenCount", t}});
  }
  // An answer field this client does not know is no error (the server may grow).
  const json answer{{"translations", translations}, {"model", "m"}, {"someNewField", 1}};
  CallRecord record;
  ASSERT_TRUE(ReadAnswer(HttpApi::kV1, 200, answer.dump(), &record).ok());
  EXPECT_EQ(record.sentences, n);
  EXPECT_EQ(record.source_tokens, source);
  EXPECT_EQ(record.target_tokens, target);
}

TEST(HttpApi, V1ErrorsAreCountedByTheirStatusName) {
  CallRecord record;
  const std::string message = RandomWord();
  const json error{
      {"error", {{"code", 8}, {"status", "RESOURCE_EXHAUSTED"}, {"message", message}}}};
  // The name decides, even if the HTTP status were another code's.
  absl::Status s = ReadAnswer(HttpApi::kV1, 500, error.dump(), &record);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find(message), std::string::npos);
  s = ReadAnswer(HttpApi::kV1, 401, R"({"error":{"code":16,"status":"UNAUTHENTICATED"}})", &record);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
  // No error JSON (a proxy's page): the contract's HTTP statuses, read backwards.
  EXPECT_EQ(ReadAnswer(HttpApi::kV1, 503, "<html>bad gateway</html>", &record).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(ReadAnswer(HttpApi::kV1, 504, "", &record).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(ReadAnswer(HttpApi::kV1, 429, "", &record).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ReadAnswer(HttpApi::kV1, 404, "", &record).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadAnswer(HttpApi::kV1, 502, "", &record).code(), absl::StatusCode::kUnknown);
  // A failure that calls itself OK stays a failure.
  EXPECT_FALSE(ReadAnswer(HttpApi::kV1, 500, R"({"error":{"status":"OK"}})", &record).ok());
  // A 200 that is not the answer promised is the server's fault.
  EXPECT_EQ(ReadAnswer(HttpApi::kV1, 200, "not json", &record).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(record.sentences, 0);
}

TEST(HttpApi, LibreStatusesMapToTheGrpcBuckets) {
  const std::vector<std::pair<int, absl::StatusCode>> table = {
      {429, absl::StatusCode::kResourceExhausted}, {503, absl::StatusCode::kUnavailable},
      {400, absl::StatusCode::kInvalidArgument},   {403, absl::StatusCode::kUnauthenticated},
      {500, absl::StatusCode::kInternal},          {418, absl::StatusCode::kUnknown}};
  for (const auto& [http, code] : table) {
    CallRecord record;
    const std::string message = RandomWord();
    const absl::Status s =
        ReadAnswer(HttpApi::kLibreTranslate, http, json{{"error", message}}.dump(), &record);
    EXPECT_EQ(s.code(), code) << http;
    EXPECT_NE(s.message().find(message), std::string::npos) << s;
  }
}

TEST(HttpApi, LibreAnswerCountsItsTexts) {
  CallRecord record;
  ASSERT_TRUE(ReadAnswer(HttpApi::kLibreTranslate, 200,
                         json{{"translatedText", RandomWord()}}.dump(), &record)
                  .ok());
  EXPECT_EQ(record.sentences, 1);
  const int n = RandomInt(2, 6);
  std::vector<std::string> texts;
  for (int i = 0; i < n; ++i) texts.push_back(RandomWord());
  ASSERT_TRUE(
      ReadAnswer(HttpApi::kLibreTranslate, 200, json{{"translatedText", texts}}.dump(), &record)
          .ok());
  EXPECT_EQ(record.sentences, 1 + n);
  EXPECT_EQ(record.target_tokens, 0);  // LibreTranslate does not say
  EXPECT_EQ(ReadAnswer(HttpApi::kLibreTranslate, 200, R"({"text":"x"})", &record).code(),
            absl::StatusCode::kInternal);
}

TEST(HttpApi, StatusNamesRoundTrip) {
  for (int c = 0; c <= 16; ++c) {
    const auto code = static_cast<absl::StatusCode>(c);
    EXPECT_EQ(StatusCodeFromName(absl::StatusCodeToString(code)), code);
  }
  EXPECT_EQ(StatusCodeFromName("NOT_A_CODE"), absl::StatusCode::kUnknown);
  EXPECT_EQ(StatusCodeFromName(""), absl::StatusCode::kUnknown);
}

// A stream with random events, written in CRLF or LF, with a comment line.
struct Stream {
  std::string bytes;
  std::vector<std::pair<std::string, std::string>> events;
};
Stream RandomStream() {
  Stream s;
  const std::string eol = RandomInt(0, 1) ? "\r\n" : "\n";
  s.bytes = ": keep-alive" + eol + eol;
  for (int i = RandomInt(2, 6); i > 0; --i) {
    const std::string name = RandomInt(0, 1) ? "" : RandomWord();
    const std::string data = RandomWord() + "\n" + RandomWord();  // two data lines
    if (!name.empty()) s.bytes += "event: " + name + eol;
    s.bytes += "data: " + data.substr(0, data.find('\n')) + eol;
    s.bytes += "data:" + data.substr(data.find('\n') + 1) + eol + eol;
    s.events.emplace_back(name.empty() ? "message" : name, data);
  }
  return s;
}

TEST(SseReader, EventsAreTheSameHoweverTheBytesAreCut) {
  for (int round = 0; round < 20; ++round) {
    const Stream stream = RandomStream();
    std::vector<std::pair<std::string, std::string>> got;
    SseReader reader([&](std::string_view event, std::string_view data) {
      got.emplace_back(std::string(event), std::string(data));
    });
    for (size_t at = 0; at < stream.bytes.size();) {
      const size_t n = std::min<size_t>(RandomInt(1, 7), stream.bytes.size() - at);
      reader.Feed(std::string_view(stream.bytes).substr(at, n));
      at += n;
    }
    EXPECT_EQ(got, stream.events) << stream.bytes;
  }
}

std::string Message(const json& j) { return "data: " + j.dump() + "\n\n"; }

TEST(V1StreamReader, CountsTheFinalTranslationsAndEndsAtDone) {
  CallRecord record;
  V1StreamReader reader(&record);
  const int s = RandomInt(1, 40), t = RandomInt(1, 40);
  reader.Feed(Message({{"textDelta", RandomWord()}}));
  EXPECT_TRUE(record.first_chunk_seen);
  EXPECT_EQ(reader.Finish().code(), absl::StatusCode::kUnavailable);  // not ended yet
  reader.Feed(Message({{"index", 0},
                       {"done", true},
                       {"translation", {{"sourceTokenCount", s}, {"targetTokenCount", t}}}}));
  reader.Feed("event: done\ndata: {}\n\n");
  EXPECT_TRUE(reader.Finish().ok()) << reader.Finish();
  EXPECT_EQ(record.sentences, 1);
  EXPECT_EQ(record.source_tokens, s);
  EXPECT_EQ(record.target_tokens, t);
}

TEST(V1StreamReader, AnErrorEventIsTheCallsStatus) {
  CallRecord record;
  V1StreamReader reader(&record);
  reader.Feed(Message({{"textDelta", RandomWord()}}));
  reader.Feed("event: error\ndata: " +
              json{{"error", {{"status", "DEADLINE_EXCEEDED"}, {"message", "late"}}}}.dump() +
              "\n\n");
  EXPECT_EQ(reader.Finish().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(record.sentences, 0);
}

TEST(V1StreamReader, AMessageThatIsNotJsonIsInternal) {
  CallRecord record;
  V1StreamReader reader(&record);
  reader.Feed("data: {not json\n\n");
  EXPECT_EQ(reader.Finish().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace transerve
