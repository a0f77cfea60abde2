// transerve-client: calls a transerve server (docs/architecture.md section 2). Translates the
// texts given as arguments, or one per line on stdin, and prints one translation per line in
// input order. Exits non-zero with the gRPC status on an RPC error.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/admin_commands.h"
#include "client/channel.h"
#include "client/connection_flags.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "transerve/v1/translator.grpc.pb.h"

ABSL_FLAG(std::string, model, "", "Model name (ListModels); empty = the server's default");
ABSL_FLAG(int, beam_size, 0, "Beam size; 1 = greedy; 0 = the model's default");
ABSL_FLAG(int, max_length, 0, "Most generated tokens per sentence (EOS included); 0 = default");
ABSL_FLAG(int, num_hypotheses, 0, "n-best: print this many hypotheses per text (tab-separated)");
ABSL_FLAG(bool, stream, false, "Use TranslateStream and print text as it is produced");
ABSL_FLAG(bool, show_scores, false, "Append a tab and the score to each line");
ABSL_FLAG(bool, show_alignment, false, "Ask for the alignment and print it after each line");
ABSL_FLAG(bool, truncate, false, "Let the server truncate sources that are too long");
ABSL_FLAG(bool, use_vocabulary_map, false,
          "Choose each token among the sentence's vocabulary shortlist (the model's vmap.txt)");
ABSL_FLAG(std::string, format, "text", "How the server reads each text: text or html");
ABSL_FLAG(bool, split_sentences, true,
          "Let the server cut each text into sentences (false: each text is one sequence)");
ABSL_FLAG(std::string, source_language, "",
          "Source language code, or auto to detect it; with --target_language the server picks "
          "the model");
ABSL_FLAG(std::string, target_language, "", "Target language code: the server picks the model");
ABSL_FLAG(bool, document, false,
          "Send all of stdin as one text (a document) and print its translation as it is");
ABSL_FLAG(std::string, glossary_id, "",
          "A glossary the server keeps (its Glossaries service, DeepL's /v2/glossaries): its "
          "terms come out as its target terms");
ABSL_FLAG(int, batch_size, 32, "Texts per request when reading stdin");
ABSL_FLAG(double, timeout, 0, "Deadline per request in seconds; 0 = none");
ABSL_FLAG(bool, list_models, false, "Print the server's models and exit");
ABSL_FLAG(bool, health, false,
          "Ask the grpc.health.v1 service, print its answer and exit 0 only if SERVING (for "
          "container health checks; --timeout defaults to 5 s here)");
ABSL_FLAG(std::string, health_service, "",
          "Service name for --health: empty (the whole server) or transerve.v1.Translator");

namespace transerve {
namespace {

int ReportError(const grpc::Status& s) {
  std::cerr << "transerve-client: RPC failed: "
            << absl::StatusCodeToString(static_cast<absl::StatusCode>(s.error_code())) << ": "
            << s.error_message() << "\n";
  return 1;
}

void SetDeadline(grpc::ClientContext* ctx) {
  const std::string token = AuthTokenFromFlags();
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  const double timeout = absl::GetFlag(FLAGS_timeout);
  if (timeout > 0) {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::microseconds(static_cast<int64_t>(timeout * 1e6)));
  }
}

std::string FormatLine(const v1::Translation& t) {
  std::string line = t.text();
  if (absl::GetFlag(FLAGS_show_scores)) absl::StrAppendFormat(&line, "\t%.6f", t.score());
  for (int i = 1; i < t.hypotheses_size(); ++i) {
    line += "\t" + t.hypotheses(i).text();
    if (absl::GetFlag(FLAGS_show_scores)) {
      absl::StrAppendFormat(&line, "\t%.6f", t.hypotheses(i).score());
    }
  }
  if (absl::GetFlag(FLAGS_show_alignment) && t.has_alignment()) {
    // One row per target piece: the piece, then its weight on each source piece.
    const auto& a = t.alignment();
    line += "\n# alignment; source pieces:";
    for (const std::string& piece : a.source_tokens()) line += " " + piece;
    for (int r = 0; r < a.target_length(); ++r) {
      line += "\n# " + (r < a.target_tokens_size() ? a.target_tokens(r) : std::string("?"));
      for (int c = 0; c < a.source_length(); ++c) {
        absl::StrAppendFormat(&line, " %.3f", a.weights(r * a.source_length() + c));
      }
    }
  }
  return line;
}

v1::TranslateRequest MakeRequest(const std::vector<std::string>& texts) {
  v1::TranslateRequest req;
  for (const auto& t : texts) req.add_texts(t);
  req.set_model(absl::GetFlag(FLAGS_model));
  auto* o = req.mutable_options();
  o->set_beam_size(absl::GetFlag(FLAGS_beam_size));
  o->set_max_length(absl::GetFlag(FLAGS_max_length));
  o->set_num_hypotheses(absl::GetFlag(FLAGS_num_hypotheses));
  o->set_return_scores(absl::GetFlag(FLAGS_show_scores));
  o->set_return_alignment(absl::GetFlag(FLAGS_show_alignment));
  o->set_truncate(absl::GetFlag(FLAGS_truncate));
  o->set_use_vocabulary_map(absl::GetFlag(FLAGS_use_vocabulary_map));
  req.set_source_language(absl::GetFlag(FLAGS_source_language));
  req.set_target_language(absl::GetFlag(FLAGS_target_language));
  auto* d = req.mutable_document();
  d->set_format(absl::GetFlag(FLAGS_format) == "html" ? v1::DocumentOptions::FORMAT_HTML
                                                      : v1::DocumentOptions::FORMAT_TEXT);
  if (!absl::GetFlag(FLAGS_split_sentences)) d->set_split_sentences(false);
  d->set_glossary_id(absl::GetFlag(FLAGS_glossary_id));
  return req;
}

int TranslateUnary(v1::Translator::Stub* stub, const std::vector<std::string>& texts) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  v1::TranslateResponse resp;
  grpc::Status s = stub->Translate(&ctx, MakeRequest(texts), &resp);
  if (!s.ok()) return ReportError(s);
  if (!resp.detected_language().empty()) {
    std::cerr << "detected language: " << resp.detected_language() << " (confidence "
              << resp.detected_language_confidence() << ")\n";
  }
  for (const auto& t : resp.translations()) {
    std::cout << (absl::GetFlag(FLAGS_document) ? t.text() : FormatLine(t) + "\n");
  }
  std::cout.flush();
  return 0;
}

// Prints sentence i's text as it grows when i is the next line to print; later sentences are
// buffered until their turn, so lines stay in input order.
int TranslateStreaming(v1::Translator::Stub* stub, const std::vector<std::string>& texts) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  auto reader = stub->TranslateStream(&ctx, MakeRequest(texts));
  std::vector<std::string> pending(texts.size());
  std::vector<std::optional<v1::Translation>> done(texts.size());
  size_t next = 0;
  v1::TranslateStreamResponse chunk;
  auto advance = [&]() {
    while (next < texts.size() && done[next].has_value()) {
      // The final line: what was not printed yet, plus scores etc.
      const std::string line = FormatLine(*done[next]);
      std::cout << line.substr(std::min(line.size(), pending[next].size())) << "\n";
      ++next;
      if (next < texts.size()) std::cout << pending[next];
    }
    std::cout.flush();
  };
  while (reader->Read(&chunk)) {
    const size_t i = static_cast<size_t>(chunk.index());
    if (i >= texts.size()) continue;
    if (chunk.done()) {
      // pending[i] holds what was printed (or buffered); the final line replaces the rest.
      done[i] = chunk.translation();
      if (i == next) advance();
      continue;
    }
    pending[i] += chunk.text_delta();
    if (i == next) {
      std::cout << chunk.text_delta();
      std::cout.flush();
    }
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) {
    if (next < texts.size() && !pending[next].empty()) std::cout << "\n";
    return ReportError(s);
  }
  return 0;
}

int ListModels(v1::Translator::Stub* stub) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  v1::ListModelsResponse resp;
  grpc::Status s = stub->ListModels(&ctx, v1::ListModelsRequest(), &resp);
  if (!s.ok()) return ReportError(s);
  // Languages as "en->de", "en->de,es,it" or "de,en,fr->de,en,fr" ("?" where unknown).
  auto languages = [](const v1::ModelInfo& m) {
    auto side = [](const auto& many, const std::string& one) {
      if (!many.empty()) return absl::StrJoin(many, ",");
      return one.empty() ? std::string("?") : one;
    };
    return side(m.source_languages(), m.source_language()) + "->" +
           side(m.target_languages(), m.target_language());
  };
  for (const auto& m : resp.models()) {
    std::cout << m.name() << (m.is_default() ? " (default)" : "") << "\t" << m.architecture()
              << "\t" << m.device() << "\t" << m.dtype() << "\t"
              << (m.loaded() ? "loaded" : "not loaded") << "\t" << languages(m) << "\n";
  }
  return 0;
}

// --health: 0 when SERVING, 1 for NOT_SERVING or any RPC error (both printed).
int CheckHealth(const std::shared_ptr<grpc::Channel>& channel) {
  using grpc::health::v1::HealthCheckResponse;
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  if (absl::GetFlag(FLAGS_timeout) <= 0) {
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(absl::GetFlag(FLAGS_health_service));
  HealthCheckResponse resp;
  grpc::Status s = stub->Check(&ctx, req, &resp);
  if (!s.ok()) return ReportError(s);
  std::cout << HealthCheckResponse::ServingStatus_Name(resp.status()) << "\n";
  return resp.status() == HealthCheckResponse::SERVING ? 0 : 1;
}

int Run(const std::vector<char*>& positional) {
  auto channel = MakeChannel(ChannelOptionsFromFlags());
  if (!channel.ok()) {
    std::cerr << "transerve-client: " << channel.status().message() << "\n";
    return 2;
  }
  if (absl::GetFlag(FLAGS_health)) return CheckHealth(*channel);
  if (AdminCommandRequested()) return RunAdminCommand(*channel, absl::GetFlag(FLAGS_timeout));
  auto stub = v1::Translator::NewStub(*channel);
  if (absl::GetFlag(FLAGS_list_models)) return ListModels(stub.get());
  auto translate = [&](const std::vector<std::string>& texts) {
    return absl::GetFlag(FLAGS_stream) ? TranslateStreaming(stub.get(), texts)
                                       : TranslateUnary(stub.get(), texts);
  };
  if (positional.size() > 1) {
    std::vector<std::string> texts(positional.begin() + 1, positional.end());
    return translate(texts);
  }
  if (absl::GetFlag(FLAGS_document)) {
    std::string all((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return translate({all});
  }
  const size_t batch = static_cast<size_t>(std::max(1, absl::GetFlag(FLAGS_batch_size)));
  std::vector<std::string> texts;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    texts.push_back(std::move(line));
    if (texts.size() == batch) {
      if (int rc = translate(texts); rc != 0) return rc;
      texts.clear();
    }
  }
  if (!texts.empty()) return translate(texts);
  return 0;
}

}  // namespace
}  // namespace transerve

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Translates with a transerve server; one translation per line, in input order.\n"
      "  transerve-client --target=HOST:PORT [--model=NAME] [--beam_size=N] [--stream]\n"
      "                   [--show_scores] [--show_alignment] TEXT...   (or lines on stdin)\n"
      "  transerve-client --target=HOST:PORT --list_models\n"
      "  transerve-client --target=HOST:PORT --health [--health_service=NAME]\n"
      "  transerve-client --target=HOST:PORT --admin=list|load|unload|reload [--admin_model=NAME]\n"
      "                   [--admin_token=T | --admin_token_file=F]");
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view) { return true; };
  absl::SetFlagsUsageConfig(usage);
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  return transerve::Run(positional);
}
