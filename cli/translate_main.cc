// transerve-translate: offline translation, one sentence per line on stdin, one line per
// sentence on stdout, in input order (docs/architecture.md section 2).
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "model/core/logging.h"
#include "model/translator/engine_process.h"
#include "model/translator/translator.h"

ABSL_FLAG(std::string, model_dir, "", "Marian checkpoint directory (Hugging Face layout)");
ABSL_FLAG(std::string, device, "auto", "auto, cpu or cuda");
ABSL_FLAG(std::string, dtype, "auto",
          "Weights: auto (float16 on a GPU, float32 on the CPU), float32 or float16 (GPU)");
ABSL_FLAG(int, beam_size, 0, "Beam size; 1 = greedy; 0 = the model's generation_config default");
ABSL_FLAG(int, max_length, 0,
          "Most generated tokens per sentence, EOS included; 0 = the model's default");
ABSL_FLAG(int, min_length, 0, "Fewest generated tokens per sentence, EOS included");
ABSL_FLAG(float, length_penalty, 1.0f, "Beam scores are divided by length^length_penalty");
ABSL_FLAG(int, num_hypotheses, 1, "jsonl: also print this many n-best hypotheses");
ABSL_FLAG(int, batch_size, 32, "Sentences per batch (input is sorted by length in chunks)");
ABSL_FLAG(std::string, output_format, "text", "text or jsonl");
ABSL_FLAG(bool, truncate, false, "Truncate sources longer than the model accepts (else error)");
ABSL_FLAG(int, num_threads, 0, "Compute threads; 0 = every core");
ABSL_FLAG(std::string, log_level, "warn", "trace, debug, info, warn, error");

namespace transerve {
namespace {

nlohmann::json HypothesisJson(const TranslationHypothesis& h) {
  return {{"text", h.text}, {"ids", h.ids}, {"score", h.score}};
}

std::string FormatLine(const Translation& t, bool jsonl) {
  if (!jsonl) return t.best.text;
  nlohmann::json line = HypothesisJson(t.best);
  if (!t.alternatives.empty()) {
    nlohmann::json nbest = nlohmann::json::array({HypothesisJson(t.best)});
    for (const auto& alt : t.alternatives) nbest.push_back(HypothesisJson(alt));
    line["nbest"] = nbest;
  }
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int Run() {
  SetLogLevel(absl::GetFlag(FLAGS_log_level));
  const std::string format = absl::GetFlag(FLAGS_output_format);
  if (format != "text" && format != "jsonl") {
    std::cerr << "--output_format must be text or jsonl\n";
    return 2;
  }
  if (absl::GetFlag(FLAGS_model_dir).empty()) {
    std::cerr << "--model_dir is required\n";
    return 2;
  }
  TranslatorOptions topts;
  topts.model_dir = absl::GetFlag(FLAGS_model_dir);
  topts.device = absl::GetFlag(FLAGS_device);
  topts.dtype = absl::GetFlag(FLAGS_dtype);
  topts.num_threads = absl::GetFlag(FLAGS_num_threads);
  auto translator = Translator::Create(topts);
  if (!translator.ok()) {
    std::cerr << "transerve-translate: " << translator.status() << "\n";
    return 1;
  }
  DecodingOptions options = (*translator)->DefaultOptions();
  if (absl::GetFlag(FLAGS_beam_size) > 0) options.beam_size = absl::GetFlag(FLAGS_beam_size);
  if (absl::GetFlag(FLAGS_max_length) > 0) options.max_length = absl::GetFlag(FLAGS_max_length);
  options.min_length = absl::GetFlag(FLAGS_min_length);
  options.length_penalty = absl::GetFlag(FLAGS_length_penalty);
  options.num_hypotheses = absl::GetFlag(FLAGS_num_hypotheses);
  if (auto s = (*translator)->ValidateOptions(options); !s.ok()) {
    std::cerr << "transerve-translate: " << s << "\n";
    return 2;
  }
  const int batch_size = std::max(1, absl::GetFlag(FLAGS_batch_size));
  const bool jsonl = format == "jsonl";
  const bool truncate = absl::GetFlag(FLAGS_truncate);

  // Lines are read in chunks of several batches: enough to sort by length, bounded memory.
  const size_t chunk = static_cast<size_t>(batch_size) * 16;
  int failures = 0;
  size_t line_number = 0;
  std::vector<std::string> lines;
  auto flush = [&]() {
    // Each line is validated on its own so one bad line does not cost the others.
    std::vector<std::string> valid;
    std::vector<int> error_index(lines.size(), -1);
    std::vector<std::string> errors;
    for (size_t i = 0; i < lines.size(); ++i) {
      auto ids = (*translator)->Tokenize(lines[i], truncate);
      if (ids.ok()) {
        valid.push_back(lines[i]);
      } else {
        error_index[i] = static_cast<int>(errors.size());
        errors.push_back(std::string(ids.status().message()));
      }
    }
    auto results = (*translator)->Translate(valid, options, batch_size, truncate);
    if (!results.ok()) {
      std::cerr << "transerve-translate: " << results.status() << "\n";
      std::exit(1);
    }
    size_t next = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      const size_t n = line_number - lines.size() + i + 1;
      if (error_index[i] >= 0) {
        ++failures;
        std::cerr << "transerve-translate: line " << n << ": " << errors[error_index[i]] << "\n";
        std::cout << (jsonl ? nlohmann::json{{"error", errors[error_index[i]]}}.dump() : "")
                  << "\n";
      } else {
        std::cout << FormatLine((*results)[next++], jsonl) << "\n";
      }
    }
    std::cout.flush();
    lines.clear();
  };
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    ++line_number;
    if (lines.size() == chunk) flush();
  }
  if (!lines.empty()) flush();
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace transerve

int main(int argc, char** argv) {
  transerve::PrepareEngineProcess(argv);
  absl::SetProgramUsageMessage(
      "Translates stdin to stdout, one sentence per line.\n"
      "  transerve-translate --model_dir=DIR [--beam_size=N] [--max_length=N] [--batch_size=N]\n"
      "                      [--output_format=text|jsonl] < input.txt");
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view) { return true; };
  absl::SetFlagsUsageConfig(config);
  absl::ParseCommandLine(argc, argv);
  return transerve::Run();
}
