#include "server/raw_messages.h"

#include <string>

#include "transerve/internal/lenient_request.pb.h"

namespace transerve {

std::optional<v1::TranslateRequest> ParseTranslateRequest(const grpc::ByteBuffer& raw) {
  internal::LenientTranslateRequest lenient;
  if (raw.Length() > 0) {  // (an empty message has no slice to dump)
    grpc::Slice bytes;
    if (!raw.DumpToSingleSlice(&bytes).ok()) return std::nullopt;
    if (!lenient.ParseFromArray(bytes.begin(), static_cast<int>(bytes.size()))) {
      return std::nullopt;
    }
  }
  v1::TranslateRequest r;
  r.mutable_texts()->Reserve(lenient.texts_size());
  for (const auto& t : lenient.texts()) r.add_texts(t);
  r.set_model(lenient.model());
  if (lenient.has_options()) *r.mutable_options() = lenient.options();
  r.set_source_language(lenient.source_language());
  r.set_target_language(lenient.target_language());
  if (lenient.has_document()) {
    const internal::LenientDocumentOptions& d = lenient.document();
    v1::DocumentOptions* out = r.mutable_document();
    out->set_format(d.format());
    if (d.has_split_sentences()) out->set_split_sentences(d.split_sentences());
    if (d.has_protect_spans()) out->set_protect_spans(d.protect_spans());
    for (const auto& term : d.protected_terms()) out->add_protected_terms(term);
    out->set_glossary_id(d.glossary_id());
    for (const auto& e : d.glossary_entries()) {
      v1::GlossaryEntry* entry = out->add_glossary_entries();
      entry->set_source(e.source());
      entry->set_target(e.target());
    }
    for (const auto& name : d.untranslated_elements()) out->add_untranslated_elements(name);
  }
  return r;
}

grpc::ByteBuffer SerializeMessage(const google::protobuf::MessageLite& message) {
  // The slice takes the string over (no copy) and frees it when gRPC is done with it.
  auto* bytes = new std::string(message.SerializeAsString());
  grpc::Slice slice(
      bytes->data(), bytes->size(), [](void* p) { delete static_cast<std::string*>(p); }, bytes);
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace transerve
