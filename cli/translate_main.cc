// transerve-translate: offline translation, one text per line on stdin, one line per text on
// stdout, in input order; or (--document) all of stdin as one document. Each text is read by
// the text layer (sentences, markup, protected spans: docs/text.md) as the server reads it.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"
#include "files/file_format.h"
#include "model/core/logging.h"
#include "model/translator/engine_process.h"
#include "model/translator/translator.h"
#include "pipeline/document_segments.h"
#include "pipeline/language_tokens.h"
#include "text/language_code.h"

ABSL_FLAG(std::string, model_dir, "", "Marian checkpoint directory (Hugging Face layout)");
ABSL_FLAG(std::string, device, "auto", "auto, cpu or cuda");
ABSL_FLAG(std::string, dtype, "auto",
          "Weights: auto (float16 on a GPU; on the CPU int8 if the model passes a quality check "
          "against float32 at load, else bfloat16 where avx512_bf16 runs it and it passes, else "
          "float32), float32, float16 (GPU), bfloat16 or int8 (CPU; explicit ones unchecked)");
ABSL_FLAG(std::string, cpu_isa, "",
          "Lower the CPU kernels' instruction-set level: avx2, avx512, avx512_vnni or "
          "avx512_bf16 (empty: the highest this CPU has)");
ABSL_FLAG(int, beam_size, 0, "Beam size; 1 = greedy; 0 = the model's generation_config default");
ABSL_FLAG(int, max_length, 0,
          "Most generated tokens per sentence, EOS included; 0 = the model's default");
ABSL_FLAG(std::optional<int>, min_length, std::nullopt,
          "Fewest generated tokens per sentence, EOS included; unset = the model's default");
ABSL_FLAG(std::optional<float>, length_penalty, std::nullopt,
          "Beam scores are divided by length^length_penalty; unset = the model's default");
ABSL_FLAG(std::string, search_rules, "model",
          "Whose search: when a beam search stops and what the length limit does. model (the "
          "model's own: Hugging Face's for a Hugging Face checkpoint, CTranslate2's for a "
          "CTranslate2 directory), huggingface or ctranslate2");
ABSL_FLAG(bool, use_vocabulary_map, false,
          "Choose each token among the sentence's vocabulary shortlist (the model's vmap.txt); "
          "CPU only");
ABSL_FLAG(int, num_hypotheses, 1, "jsonl: also print this many n-best hypotheses");
ABSL_FLAG(int, batch_size, 32, "Sentences per batch (input is sorted by length in chunks)");
ABSL_FLAG(std::string, output_format, "text", "text or jsonl");
ABSL_FLAG(bool, truncate, false, "Truncate sources longer than the model accepts (else error)");
ABSL_FLAG(int, num_threads, 0, "Compute threads; 0 = every core");
ABSL_FLAG(std::string, log_level, "warn", "trace, debug, info, warn, error");
ABSL_FLAG(std::string, format, "text", "Input: text or html (markup kept, tags carried over)");
ABSL_FLAG(bool, split_sentences, true,
          "Translate each sentence of a line as its own sequence (false: each line whole)");
ABSL_FLAG(bool, protect_spans, true,
          "Pass format specifiers, URLs, e-mail addresses and file paths through untranslated");
ABSL_FLAG(bool, document, false,
          "Read all of stdin as one document and write its translation, layout kept");
ABSL_FLAG(std::string, file, "",
          "Translate this file, its format chosen by its extension (.srt, .vtt: docs/files.md), "
          "instead of stdin; the translated file goes to --output");
ABSL_FLAG(std::string, output, "", "With --file: write the translated file here (else stdout)");
ABSL_FLAG(std::string, language, "en",
          "The source's language: its sentence break rules, and the code an M2M-100 / NLLB-200 "
          "source starts with");
ABSL_FLAG(std::string, target_language, "",
          "A multilingual model's target language (its >>xx<< token, or the code an M2M-100 / "
          "NLLB-200 model is forced to write first); required by M2M-100 / NLLB-200");

namespace transerve {
namespace {

struct TextResult {
  std::string text;
  std::vector<int32_t> ids;  // every segment's best ids, in order
  float score = 0;           // the sum of the segments' scores
  nlohmann::json sentences = nlohmann::json::array();
  // With --num_hypotheses > 1: the document of each segment's n-th hypothesis, best first.
  nlohmann::json nbest = nlohmann::json::array();
};

// --language and --target_language as a multilingual model's tokens (LanguageTokenTable::Resolve's
// refusals).
absl::Status ApplyLanguages(const Translator& t, SegmentSettings* settings,
                            DecodingOptions* options) {
  const std::string source = text::CanonicalLanguage(absl::GetFlag(FLAGS_language));
  const std::string target = text::CanonicalLanguage(absl::GetFlag(FLAGS_target_language));
  auto tokens =
      ReadLanguageTokens(t.tokenizer()).Resolve(absl::GetFlag(FLAGS_model_dir), source, target);
  if (!tokens.ok()) return tokens.status();
  return ApplyLanguageTokens(t.tokenizer(), *tokens, settings, options);
}

TextResult Assemble(const Translator& t, const DocumentSegments& doc,
                    std::span<const SearchResult> results, int num_hypotheses) {
  TextResult out;
  std::vector<text::AlignedTranslation> restored(results.size());
  for (size_t s = 0; s < results.size(); ++s) {
    const Hypothesis& h = results[s].hypotheses[0];
    restored[s] = doc.document.Restore(s, ToAligned(t, doc.document.model_text(s), doc.ids[s], h));
    out.ids.insert(out.ids.end(), h.ids.begin(), h.ids.end());
    out.score += h.score;
    out.sentences.push_back(
        {{"source", restored[s].source},
         {"text", restored[s].target},
         {"confidence", h.ids.empty() ? 0.0f : h.log_prob / static_cast<float>(h.ids.size())}});
  }
  out.text = doc.document.Assemble(restored);
  size_t most = 0;
  for (const auto& r : results) most = std::max(most, r.hypotheses.size());
  for (size_t j = 0; num_hypotheses > 1 && j < std::min<size_t>(num_hypotheses, most); ++j) {
    std::vector<int32_t> ids;
    float score = 0;
    for (const auto& r : results) {
      const Hypothesis& h = r.hypotheses[std::min(j, r.hypotheses.size() - 1)];
      ids.insert(ids.end(), h.ids.begin(), h.ids.end());
      score += h.score;
    }
    out.nbest.push_back(
        {{"text", j == 0 ? out.text : AssembleHypothesis(t, doc.document, doc.ids, results, j)},
         {"ids", ids},
         {"score", score}});
  }
  return out;
}

std::string FormatLine(const TextResult& r, bool jsonl) {
  if (!jsonl) return r.text;
  nlohmann::json line = {
      {"text", r.text}, {"ids", r.ids}, {"score", r.score}, {"sentences", r.sentences}};
  if (!r.nbest.empty()) line["nbest"] = r.nbest;
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
  topts.cpu_isa = absl::GetFlag(FLAGS_cpu_isa);
  topts.num_threads = absl::GetFlag(FLAGS_num_threads);
  auto translator = Translator::Create(topts);
  if (!translator.ok()) {
    std::cerr << "transerve-translate: " << translator.status() << "\n";
    return 1;
  }
  DecodingOptions options = (*translator)->DefaultOptions();
  if (absl::GetFlag(FLAGS_beam_size) > 0) options.beam_size = absl::GetFlag(FLAGS_beam_size);
  if (absl::GetFlag(FLAGS_max_length) > 0) options.max_length = absl::GetFlag(FLAGS_max_length);
  if (absl::GetFlag(FLAGS_min_length)) {
    options.min_length = *absl::GetFlag(FLAGS_min_length);
  } else {
    options.min_length = std::min(options.min_length, options.max_length);  // follows a short max
  }
  if (absl::GetFlag(FLAGS_length_penalty)) {
    options.length_penalty = *absl::GetFlag(FLAGS_length_penalty);
  }
  options.num_hypotheses = absl::GetFlag(FLAGS_num_hypotheses);
  options.use_vocabulary_map = absl::GetFlag(FLAGS_use_vocabulary_map);
  const std::string search_rules = absl::GetFlag(FLAGS_search_rules);
  if (search_rules == "huggingface") {
    options.rules = SearchRules::kHuggingFace;
  } else if (search_rules == "ctranslate2") {
    options.rules = SearchRules::kCTranslate2;
  } else if (search_rules != "model") {
    std::cerr << "--search_rules must be model, huggingface or ctranslate2\n";
    return 2;
  }
  if (auto s = (*translator)->ValidateOptions(options); !s.ok()) {
    std::cerr << "transerve-translate: " << s << "\n";
    return 2;
  }
  const int batch_size = std::max(1, absl::GetFlag(FLAGS_batch_size));
  const bool jsonl = format == "jsonl";
  text::DocumentOptions document_options;
  const std::string input_format = absl::GetFlag(FLAGS_format);
  if (input_format == "html") {
    document_options.format = text::Format::kHtml;
  } else if (input_format != "text") {
    std::cerr << "--format must be text or html\n";
    return 2;
  }
  document_options.split_sentences = absl::GetFlag(FLAGS_split_sentences);
  document_options.protect.detect = absl::GetFlag(FLAGS_protect_spans);
  document_options.language = absl::GetFlag(FLAGS_language);
  SegmentSettings settings;
  settings.max_source_tokens =
      static_cast<int>((*translator)->model().config.max_position_embeddings);
  settings.truncate = absl::GetFlag(FLAGS_truncate);
  if (auto s = ApplyLanguages(**translator, &settings, &options); !s.ok()) {
    std::cerr << "transerve-translate: " << s.message() << "\n";
    return 2;
  }

  // Translates the segments of several texts together (batched by length), then puts each text
  // back together; a text that cannot be read is reported alone and costs the others nothing.
  std::vector<std::string> lines;
  auto translate_texts = [&](std::vector<absl::StatusOr<DocumentSegments>>& docs) {
    std::vector<std::vector<int32_t>> sources;
    bool alignment = false;
    for (auto& d : docs) {
      if (!d.ok()) continue;
      for (size_t s = 0; s < d->ids.size(); ++s) {
        sources.push_back(d->ids[s]);
        alignment = alignment || d->document.needs_alignment(s);
      }
    }
    DecodingOptions o = options;
    o.return_alignment = alignment;
    auto results = (*translator)->TranslateSources(sources, o, batch_size);
    if (!results.ok()) {
      std::cerr << "transerve-translate: " << results.status() << "\n";
      std::exit(1);
    }
    std::vector<absl::StatusOr<TextResult>> out;
    size_t next = 0;
    for (auto& d : docs) {
      if (!d.ok()) {
        out.push_back(d.status());
        continue;
      }
      const std::span<const SearchResult> of_text(results->data() + next, d->ids.size());
      next += d->ids.size();
      out.push_back(Assemble(**translator, *d, of_text, options.num_hypotheses));
    }
    return out;
  };

  if (const std::string path = absl::GetFlag(FLAGS_file); !path.empty()) {
    const auto file_format = files::FormatOfName(path);
    if (!file_format) {
      std::cerr << "transerve-translate: --file: " << path << " is not of a known format ("
                << files::KnownExtensions() << ")\n";
      return 2;
    }
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::cerr << "transerve-translate: --file: cannot read " << path << "\n";
      return 2;
    }
    auto file = files::ReadFile(bytes, *file_format);
    if (!file.ok()) {
      std::cerr << "transerve-translate: " << path << ": " << file.status().message() << "\n";
      return 1;
    }
    std::vector<absl::StatusOr<DocumentSegments>> docs;
    docs.push_back(SegmentFile(**translator, *std::move(file), document_options, settings));
    auto out = translate_texts(docs);
    if (!out[0].ok()) {
      std::cerr << "transerve-translate: " << path << ": " << out[0].status() << "\n";
      return 1;
    }
    const std::string output = absl::GetFlag(FLAGS_output);
    if (output.empty()) {
      std::cout << out[0]->text;
      std::cout.flush();
      return 0;
    }
    std::ofstream written(output, std::ios::binary | std::ios::trunc);
    written << out[0]->text;
    written.close();
    if (!written) {
      std::cerr << "transerve-translate: --output: cannot write " << output << "\n";
      return 1;
    }
    return 0;
  }

  if (absl::GetFlag(FLAGS_document)) {
    std::string all((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    std::vector<absl::StatusOr<DocumentSegments>> docs;
    docs.push_back(SegmentDocument(**translator, all, document_options, settings));
    auto out = translate_texts(docs);
    if (!out[0].ok()) {
      std::cerr << "transerve-translate: " << out[0].status() << "\n";
      return 1;
    }
    std::cout << (jsonl ? FormatLine(*out[0], true) + "\n" : out[0]->text);
    std::cout.flush();
    return 0;
  }

  // Lines are read in chunks of several batches: enough to sort by length, bounded memory.
  const size_t chunk = static_cast<size_t>(batch_size) * 16;
  int failures = 0;
  size_t line_number = 0;
  auto flush = [&]() {
    std::vector<absl::StatusOr<DocumentSegments>> docs;
    for (const std::string& line : lines) {
      docs.push_back(SegmentDocument(**translator, line, document_options, settings));
    }
    auto out = translate_texts(docs);
    for (size_t i = 0; i < lines.size(); ++i) {
      const size_t n = line_number - lines.size() + i + 1;
      if (!out[i].ok()) {
        ++failures;
        const std::string error(out[i].status().message());
        std::cerr << "transerve-translate: line " << n << ": " << error << "\n";
        std::cout << (jsonl ? nlohmann::json{{"error", error}}.dump() : "") << "\n";
      } else {
        std::cout << FormatLine(*out[i], jsonl) << "\n";
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
      "Translates stdin to stdout, one text per line (or --document: all of it as one).\n"
      "  transerve-translate --model_dir=DIR [--beam_size=N] [--max_length=N] [--batch_size=N]\n"
      "                      [--format=text|html] [--split_sentences=false] [--document]\n"
      "                      [--output_format=text|jsonl] < input.txt\n"
      "  transerve-translate --model_dir=DIR --file=IN.srt|IN.vtt [--output=OUT]");
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view) { return true; };
  absl::SetFlagsUsageConfig(config);
  absl::ParseCommandLine(argc, argv);
  return transerve::Run();
}
