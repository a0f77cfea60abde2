// The alternative measured against CLD2: libexttextcat (Debian's libexttextcat-dev, the n-gram
// "TextCat" guesser LibreOffice uses), on the same data as language_detection_bench.cc, with
// its fingerprints restricted to the benchmark's languages plus English. Prints accuracy of
// texts of 20+ characters per language and subset. Built only where libexttextcat is installed.
#include <textcat.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"

ABSL_FLAG(std::string, data, "build/bench_data/language_detection.tsv",
          "subset<TAB>language<TAB>bucket<TAB>catalog<TAB>text lines");
ABSL_FLAG(std::string, fingerprints, "/usr/share/libexttextcat/",
          "Folder of libexttextcat's fingerprint (.lm) files and fpdb.conf");

namespace {

// TextCat's fingerprint files are named by language code, except Simplified Chinese.
std::string FingerprintFile(const std::string& code) {
  return code == "zh" ? "zh-Hans.lm" : code + ".lm";
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  struct Row {
    std::string subset, language, bucket, text;
  };
  std::vector<Row> rows;
  std::set<std::string> languages = {"en"};
  std::ifstream in(absl::GetFlag(FLAGS_data));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits('\t', 4));
    if (f.size() != 5) continue;
    languages.insert(f[1]);
    if (f[2] != "tiny") rows.push_back({f[0], f[1], f[2], f[4]});
  }
  if (rows.empty()) {
    std::fprintf(stderr, "no data in %s\n", absl::GetFlag(FLAGS_data).c_str());
    return 2;
  }
  // A configuration naming only the candidate languages; the label is the code itself.
  const std::string conf = "/tmp/transerve_textcat_candidates.conf";
  {
    std::ofstream out(conf);
    for (const std::string& code : languages) out << FingerprintFile(code) << " " << code << "\n";
  }
  void* handle = special_textcat_Init(conf.c_str(), absl::GetFlag(FLAGS_fingerprints).c_str());
  if (handle == nullptr) {
    std::fprintf(stderr, "libexttextcat could not load %s\n", conf.c_str());
    return 2;
  }
  textcat_SetProperty(handle, TCPROP_MINIMUM_DOCUMENT_SIZE, 1);
  // subset -> language -> {texts, correct}
  std::map<std::string, std::map<std::string, std::pair<int, int>>> tally;
  for (const Row& r : rows) {
    // "[de][nl]" when unsure (first is best), or "SHORT" / "UNKNOWN".
    std::string got = textcat_Classify(handle, r.text.data(), r.text.size());
    std::string first;
    if (got.size() > 2 && got[0] == '[') first = got.substr(1, got.find(']') - 1);
    for (const std::string& key : {r.language, std::string("all")}) {
      auto& [total, correct] = tally[r.subset][key];
      ++total;
      correct += first == r.language;
    }
  }
  textcat_Done(handle);
  std::printf("libexttextcat %s, accuracy %% on texts of 20+ characters\n%-4s", textcat_Version(),
              "lang");
  for (const auto& [subset, per_language] : tally) std::printf(" %8s", subset.c_str());
  std::printf("\n");
  for (const std::string& code : languages) {
    if (!tally.begin()->second.count(code)) continue;
    std::printf("%-4s", code.c_str());
    for (auto& [subset, per_language] : tally) {
      auto [total, correct] = per_language[code];
      std::printf(" %8.2f", total ? 100.0 * correct / total : 0.0);
    }
    std::printf("\n");
  }
  std::printf("%-4s", "all");
  for (auto& [subset, per_language] : tally) {
    auto [total, correct] = per_language["all"];
    std::printf(" %8.2f", 100.0 * correct / total);
  }
  std::printf("\n");
  return 0;
}
