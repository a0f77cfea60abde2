// Request validation before queueing: limits, UTF-8, options over the model's defaults.
#include "server/request_validation.h"

#include <gtest/gtest.h>

#include "tests/testing/paths.h"
#include "text/utf8_chars.h"

namespace transerve {
namespace {

const Translator& Model() {
  static Translator* t = [] {
    TranslatorOptions o;
    o.model_dir = testing::SourceDir() + "/tests/fixtures/tiny-marian/model";
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
  // Over the token limit: cut at safe points into several segments, none over the limit...
  auto cut = PrepareRequest(Req({"a b c d e f g h"}), Model(), limits);
  ASSERT_TRUE(cut.ok()) << cut.status();
  ASSERT_GT(cut->sources.size(), 1u);
  for (const auto& ids : cut->sources) EXPECT_LE(ids.size(), 6u);
  // ... and, with sentence splitting off, refused (or truncated) as a single sequence.
  auto whole = Req({"a b c d e f g h"});
  whole.mutable_document()->set_split_sentences(false);
  EXPECT_EQ(code(whole), absl::StatusCode::kInvalidArgument);
  auto truncated = whole;
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

TEST(RequestValidationTest, EveryTextBecomesItsSentences) {
  RequestLimits limits;
  auto p = PrepareRequest(Req({"One sentence. And another!\n\nA third?", "", "Just one"}), Model(),
                          limits);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->texts.size(), 3u);
  EXPECT_EQ(p->texts[0].count(), 3u);
  EXPECT_EQ(p->texts[1].count(), 0u);  // nothing to translate
  EXPECT_EQ(p->texts[2].count(), 1u);
  EXPECT_EQ(p->texts[2].first, 3u);
  ASSERT_EQ(p->sources.size(), 4u);
  EXPECT_EQ(p->sources[1], *Model().Tokenize("And another!", false));
  // A sentence said twice is tokenized (once, then reused) for both of its segments.
  auto twice = PrepareRequest(Req({"Open it. Open it. Open %s."}), Model(), limits);
  ASSERT_TRUE(twice.ok()) << twice.status();
  ASSERT_EQ(twice->sources.size(), 3u);
  EXPECT_EQ(twice->sources[0], *Model().Tokenize("Open it.", false));
  EXPECT_EQ(twice->sources[1], twice->sources[0]);
  EXPECT_EQ(twice->sources[2], *Model().Tokenize("Open %1.", false));  // its stand-in
  limits.max_sentences = 3;
  EXPECT_EQ(PrepareRequest(Req({"One. Two.", "Three. Four."}), Model(), limits).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RequestValidationTest, DocumentOptionsAreChecked) {
  RequestLimits limits;
  auto r = Req({"a"});
  r.mutable_document()->set_format(static_cast<v1::DocumentOptions::Format>(7));
  EXPECT_EQ(PrepareRequest(r, Model(), limits).status().code(), absl::StatusCode::kInvalidArgument);
  r = Req({"a"});
  r.mutable_document()->add_protected_terms("");
  EXPECT_EQ(PrepareRequest(r, Model(), limits).status().code(), absl::StatusCode::kInvalidArgument);
  r = Req({"a"});
  r.mutable_document()->add_protected_terms("\xff");
  EXPECT_EQ(PrepareRequest(r, Model(), limits).status().code(), absl::StatusCode::kInvalidArgument);
  limits.max_protected_terms = 1;
  r = Req({"a"});
  r.mutable_document()->add_protected_terms("x");
  r.mutable_document()->add_protected_terms("y");
  EXPECT_EQ(PrepareRequest(r, Model(), limits).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RequestValidationTest, CountsCodePoints) {
  EXPECT_EQ(text::CountCodePoints(""), 0);
  EXPECT_EQ(text::CountCodePoints("abc"), 3);
  EXPECT_EQ(text::CountCodePoints("äöü€😀"), 5);
}

}  // namespace
}  // namespace transerve
