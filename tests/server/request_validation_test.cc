// Request validation before queueing: limits, UTF-8, options over the model's defaults.
#include "server/request_validation.h"

#include <gtest/gtest.h>

namespace transerve {
namespace {

const Translator& Model() {
  static Translator* t = [] {
    TranslatorOptions o;
    o.model_dir = TRANSERVE_SOURCE_DIR "/tests/fixtures/tiny-marian/model";
    o.num_threads = 1;
    auto r = Translator::Create(o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r->release();
  }();
  return *t;
}

v1::TranslateRequest Req(std::vector<std::string> texts) {
  v1::TranslateRequest r;
  for (auto& t : texts) r.add_texts(t);
  return r;
}

TEST(RequestValidationTest, TokenizesEveryTextWithEos) {
  RequestLimits limits;
  auto p = PrepareRequest(Req({"hello world", "a"}), Model(), limits);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->sources.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(p->sources[i], *Model().Tokenize(i == 0 ? "hello world" : "a", false));
  }
  EXPECT_EQ(p->source_tokens, static_cast<int64_t>(p->sources[0].size() + p->sources[1].size()));
}

TEST(RequestValidationTest, DefaultsComeFromTheModelCappedByLimits) {
  RequestLimits limits;
  limits.max_length = 40;
  limits.max_beam_size = 2;
  auto o = ResolveOptions(v1::DecodingOptions(), Model(), limits);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->beam_size, 2);  // the model says 4, the server allows 2
  EXPECT_EQ(o->max_length, 40);
  EXPECT_EQ(o->num_hypotheses, 1);
  v1::DecodingOptions asked;
  asked.set_beam_size(1);
  asked.set_max_length(7);
  asked.set_length_penalty(0.5f);
  o = ResolveOptions(asked, Model(), limits);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->beam_size, 1);
  EXPECT_EQ(o->max_length, 7);
  EXPECT_FLOAT_EQ(o->length_penalty, 0.5f);
}

TEST(RequestValidationTest, RejectsWhatTheContractRejects) {
  RequestLimits limits;
  limits.max_texts = 2;
  limits.max_text_chars = 20;
  limits.max_source_tokens = 6;
  auto code = [&](const v1::TranslateRequest& r) {
    return PrepareRequest(r, Model(), limits).status().code();
  };
  EXPECT_EQ(code(Req({})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Req({"a", "b", "c"})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Req({"\xff"})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Req({"0123456789abcdefghijx"})), absl::StatusCode::kInvalidArgument);
  // 20 characters (but 40 bytes) is within the character limit.
  EXPECT_EQ(PrepareRequest(Req({"ääääääääääääääääääää"}), Model(), limits)
                .status()
                .message()
                .find("characters"),
            std::string::npos);
  EXPECT_EQ(code(Req({"a b c d e f g h"})), absl::StatusCode::kInvalidArgument);
  auto truncated = Req({"a b c d e f g h"});
  truncated.mutable_options()->set_truncate(true);
  auto p = PrepareRequest(truncated, Model(), limits);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->sources[0].size(), 6u);
  EXPECT_EQ(p->sources[0].back(), Model().special_tokens().eos);
  auto bad = Req({"a"});
  bad.mutable_options()->set_beam_size(-1);
  EXPECT_EQ(code(bad), absl::StatusCode::kInvalidArgument);
  bad.mutable_options()->set_beam_size(9);
  EXPECT_EQ(code(bad), absl::StatusCode::kInvalidArgument);
  bad.mutable_options()->set_beam_size(1);
  bad.mutable_options()->set_max_length(100000);
  EXPECT_EQ(code(bad), absl::StatusCode::kInvalidArgument);
  // An asked min_length over max_length is an error, not silently lowered.
  bad.mutable_options()->set_max_length(8);
  bad.mutable_options()->set_min_length(9);
  EXPECT_EQ(code(bad), absl::StatusCode::kInvalidArgument);
  bad.mutable_options()->set_min_length(8);
  EXPECT_EQ(code(bad), absl::StatusCode::kOk);
  auto align = Req({"a"});
  align.mutable_options()->set_return_alignment(true);
  auto aligned = PrepareRequest(align, Model(), limits);
  ASSERT_TRUE(aligned.ok()) << aligned.status();
  EXPECT_TRUE(aligned->options.return_alignment);
  EXPECT_FALSE(PrepareRequest(Req({"a"}), Model(), limits)->options.return_alignment);
}

TEST(RequestValidationTest, CountsCodePoints) {
  EXPECT_EQ(CountCodePoints(""), 0);
  EXPECT_EQ(CountCodePoints("abc"), 3);
  EXPECT_EQ(CountCodePoints("äöü€😀"), 5);
}

}  // namespace
}  // namespace transerve
