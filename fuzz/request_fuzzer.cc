// Fuzz target: request validation, the path every gRPC call takes before anything is queued.
// Inputs are serialized TranslateRequest messages (as they arrive on the wire), checked against
// the tiny fixture model with limits small enough that every branch is reachable.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "model/translator/translator.h"
#include "server/request_validation.h"
#include "transerve/v1/translator.pb.h"

namespace {

const transerve::Translator* FixtureTranslator() {
  static const auto* translator = [] {
    transerve::TranslatorOptions o;
    o.model_dir = TRANSERVE_SOURCE_DIR "/tests/fixtures/tiny-marian/model";
    o.device = "cpu";
    o.num_threads = 1;
    auto t = transerve::Translator::Create(o);
    return t.ok() ? t->release() : nullptr;
  }();
  return translator;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const transerve::Translator* translator = FixtureTranslator();
  if (translator == nullptr) return 0;
  transerve::v1::TranslateRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  transerve::RequestLimits limits;
  limits.max_texts = 8;
  limits.max_text_chars = 256;
  limits.max_sentences = 32;
  limits.max_source_tokens = 64;
  limits.max_beam_size = 4;
  limits.max_length = 32;
  auto prepared = transerve::PrepareRequest(request, *translator, limits);
  if (prepared.ok()) {
    // What validation accepts must be within the limits it enforces: texts, their segments
    // (each text's run of sources, in order, covering them all), tokens per segment.
    if (static_cast<int>(prepared->texts.size()) > limits.max_texts) __builtin_trap();
    if (static_cast<int>(prepared->sources.size()) > limits.max_sentences) __builtin_trap();
    size_t next = 0;
    for (const auto& text : prepared->texts) {
      if (text.first != next) __builtin_trap();
      next += text.count();
    }
    if (next != prepared->sources.size()) __builtin_trap();
    for (const auto& ids : prepared->sources) {
      if (ids.empty() || static_cast<int>(ids.size()) > limits.max_source_tokens) {
        __builtin_trap();
      }
    }
    if (prepared->options.beam_size < 1 || prepared->options.beam_size > limits.max_beam_size ||
        prepared->options.max_length > limits.max_length) {
      __builtin_trap();
    }
  }
  return 0;
}
