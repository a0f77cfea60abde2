// Accuracy of text/language_detector.h on labelled texts (bench/language_detection_data.py
// writes them from Debian's translation catalogs). Prints accuracy per language and length
// bucket, the most frequent confusions, and writes everything, with example errors, as JSON.
//
// Two ways of reading the detector's answer are scored:
//   any        the first language DetectLanguages returns, out of all CLD2 knows;
//   candidates the first language DetectLanguagesAmong returns, with the benchmark's languages
//              plus English as candidates (a server with models for exactly these source
//              languages): answers outside them dropped, or mapped within a close group.
// and, for information, "close" counts an answer within the same group of languages that are
// hard to tell apart in writing (bs/hr/sr, da/nb/nn, id/ms) as right.
// Each subset of the data ("all" cleaned strings, and "prose": strings sharing no word with
// their English msgid) is reported on its own.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"
#include "text/language_detector.h"

ABSL_FLAG(std::string, data, "build/bench_data/language_detection.tsv",
          "subset<TAB>language<TAB>bucket<TAB>catalog<TAB>text lines "
          "(bench/language_detection_data.py)");
ABSL_FLAG(std::string, json, "bench/results/language_detection.json", "Write results here");
ABSL_FLAG(int, examples, 4, "Example errors kept per language and bucket in the JSON");

namespace {

using transerve::text::DetectedLanguage;
using transerve::text::DetectLanguages;
using transerve::text::DetectLanguagesAmong;

const std::vector<std::string> kBuckets = {"tiny", "short", "medium", "long"};

struct Sample {
  std::string subset, language, bucket, catalog, text;
};

// Languages that CLD2 (and readers) often cannot tell apart in short texts.
std::string CloseGroup(const std::string& code) {
  if (code == "bs" || code == "hr" || code == "sr") return "bs/hr/sr";
  if (code == "da" || code == "nb" || code == "nn") return "da/nb/nn";
  if (code == "id" || code == "ms") return "id/ms";
  return code;
}

struct Tally {
  int total = 0;
  int correct = 0;
  int correct_candidates = 0;
  int correct_close = 0;
  int reliable = 0;
  int reliable_correct = 0;
  double Accuracy() const { return total ? 100.0 * correct / total : 0; }
  double CandidateAccuracy() const { return total ? 100.0 * correct_candidates / total : 0; }
  double CloseAccuracy() const { return total ? 100.0 * correct_close / total : 0; }
  void Add(const Tally& o) {
    total += o.total;
    correct += o.correct;
    correct_candidates += o.correct_candidates;
    correct_close += o.correct_close;
    reliable += o.reliable;
    reliable_correct += o.reliable_correct;
  }
};

std::vector<Sample> ReadSamples(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot read %s (run bench/language_detection_data.py --out %s)\n",
                 path.c_str(), path.c_str());
    std::exit(2);
  }
  std::vector<Sample> out;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits('\t', 4));
    if (f.size() != 5) continue;
    out.push_back({f[0], f[1], f[2], f[3], f[4]});
  }
  return out;
}

nlohmann::json TallyJson(const Tally& t) {
  return {{"texts", t.total},
          {"correct", t.correct},
          {"accuracy_percent", t.Accuracy()},
          {"accuracy_candidates_percent", t.CandidateAccuracy()},
          {"accuracy_close_groups_percent", t.CloseAccuracy()},
          {"reliable", t.reliable},
          {"reliable_correct", t.reliable_correct}};
}

// Scores one subset: prints its tables, returns its JSON.
nlohmann::json Report(const std::string& subset, const std::vector<Sample>& samples,
                      const std::vector<std::string>& candidates) {
  std::printf("\n== subset %s: accuracy %% of the first language returned ==\n", subset.c_str());
  std::map<std::string, std::map<std::string, Tally>> tally;  // language -> bucket -> tally
  std::map<std::string, std::map<std::pair<std::string, std::string>, int>> confusions;
  nlohmann::json errors = nlohmann::json::object();
  // Texts of 20+ characters by the first answer's confidence, in fifths: {texts, correct}.
  constexpr int kBins = 5;
  std::pair<int, int> by_confidence[kBins] = {};
  for (const Sample& s : samples) {
    if (s.subset != subset) continue;
    const std::vector<DetectedLanguage> got = DetectLanguages(s.text);
    const std::string first = got.empty() ? "" : got.front().code;
    Tally& t = tally[s.language][s.bucket];
    ++t.total;
    const bool right = first == s.language;
    t.correct += right;
    const std::vector<DetectedLanguage> among = DetectLanguagesAmong(s.text, candidates);
    t.correct_candidates += !among.empty() && among.front().code == s.language;
    t.correct_close += !first.empty() && CloseGroup(first) == CloseGroup(s.language);
    if (!got.empty() && got.front().reliable) {
      ++t.reliable;
      t.reliable_correct += right;
    }
    if (!got.empty() && s.bucket != "tiny") {
      auto& [n, ok] =
          by_confidence[std::min(kBins - 1, static_cast<int>(got.front().confidence * kBins))];
      ++n;
      ok += right;
    }
    if (right) continue;
    ++confusions[s.bucket][{s.language, first.empty() ? "(none)" : first}];
    nlohmann::json& list = errors[s.language][s.bucket];
    if (static_cast<int>(list.size()) < absl::GetFlag(FLAGS_examples)) {
      nlohmann::json guesses = nlohmann::json::array();
      for (const DetectedLanguage& d : got) {
        guesses.push_back({{"code", d.code}, {"confidence", d.confidence}});
      }
      list.push_back({{"catalog", s.catalog}, {"text", s.text}, {"detected", guesses}});
    }
  }

  // Per language: accuracy per bucket, and over every text of 20 characters or more.
  std::printf("%-4s %7s %7s %7s %7s | %8s %10s %10s | %8s %10s\n", "lang", "tiny", "short",
              "medium", "long", ">=20", ">=20 cand", ">=20 close", ">=50", ">=50 cand");
  std::map<std::string, Tally> per_bucket;
  Tally all_20, all_50;
  nlohmann::json languages = nlohmann::json::object();
  int languages_at_target = 0;
  int languages_at_target_candidates = 0;
  int languages_at_99_from_50 = 0;
  int languages_at_99_from_50_candidates = 0;
  for (const auto& [language, buckets] : tally) {
    Tally at_least_20, at_least_50;
    std::printf("%-4s", language.c_str());
    for (const std::string& b : kBuckets) {
      auto it = buckets.find(b);
      Tally t = it == buckets.end() ? Tally{} : it->second;
      std::printf(" %7.2f", t.Accuracy());
      per_bucket[b].Add(t);
      if (b != "tiny") at_least_20.Add(t);
      if (b == "medium" || b == "long") at_least_50.Add(t);
      languages[language][b] = TallyJson(t);
    }
    all_20.Add(at_least_20);
    all_50.Add(at_least_50);
    languages[language]["at_least_20_chars"] = TallyJson(at_least_20);
    languages[language]["at_least_50_chars"] = TallyJson(at_least_50);
    languages_at_99_from_50 += at_least_50.Accuracy() >= 99.0;
    languages_at_99_from_50_candidates += at_least_50.CandidateAccuracy() >= 99.0;
    languages_at_target += at_least_20.Accuracy() >= 99.0;
    languages_at_target_candidates += at_least_20.CandidateAccuracy() >= 99.0;
    std::printf(" | %8.2f %10.2f %10.2f | %8.2f %10.2f\n", at_least_20.Accuracy(),
                at_least_20.CandidateAccuracy(), at_least_20.CloseAccuracy(),
                at_least_50.Accuracy(), at_least_50.CandidateAccuracy());
  }
  std::printf("%-4s", "all");
  for (const std::string& b : kBuckets) std::printf(" %7.2f", per_bucket[b].Accuracy());
  std::printf(" | %8.2f %10.2f %10.2f | %8.2f %10.2f\n", all_20.Accuracy(),
              all_20.CandidateAccuracy(), all_20.CloseAccuracy(), all_50.Accuracy(),
              all_50.CandidateAccuracy());
  std::printf("%-4s", "cand");
  for (const std::string& b : kBuckets) std::printf(" %7.2f", per_bucket[b].CandidateAccuracy());
  std::printf("\n%-4s", "clos");
  for (const std::string& b : kBuckets) std::printf(" %7.2f", per_bucket[b].CloseAccuracy());
  int texts = 0;
  for (const auto& [b, t] : per_bucket) texts += t.total;
  std::printf(
      "\n%d of %zu languages at >= 99%% on texts of 20+ characters (%d with candidates); %d "
      "texts\n",
      languages_at_target, tally.size(), languages_at_target_candidates, texts);
  std::printf("%d of %zu languages at >= 99%% on texts of 50+ characters (%d with candidates)\n",
              languages_at_99_from_50, tally.size(), languages_at_99_from_50_candidates);
  std::printf("reliable flag on %d of %d texts of 20+ characters; %.2f%% of those correct\n",
              all_20.reliable, all_20.total,
              all_20.reliable ? 100.0 * all_20.reliable_correct / all_20.reliable : 0.0);
  nlohmann::json calibration = nlohmann::json::array();
  std::printf("by confidence of the first answer (20+ characters):");
  for (int q = 0; q < kBins; ++q) {
    const auto [n, ok] = by_confidence[q];
    const double percent = n ? 100.0 * ok / n : 0.0;
    std::printf(" [%.1f,%.1f) %d: %.2f%%;", q / double(kBins), (q + 1) / double(kBins), n, percent);
    calibration.push_back({{"confidence_from", q / double(kBins)},
                           {"confidence_to", (q + 1) / double(kBins)},
                           {"texts", n},
                           {"accuracy_percent", percent}});
  }
  std::printf("\n");

  nlohmann::json top_confusions = nlohmann::json::object();
  for (const std::string& b : kBuckets) {
    std::vector<std::pair<int, std::pair<std::string, std::string>>> sorted;
    for (const auto& [pair, n] : confusions[b]) sorted.push_back({n, pair});
    std::sort(sorted.rbegin(), sorted.rend());
    std::printf("%s errors, most frequent:", b.c_str());
    for (size_t i = 0; i < sorted.size(); ++i) {
      const auto& [n, pair] = sorted[i];
      if (i < 12) std::printf(" %s->%s %d", pair.first.c_str(), pair.second.c_str(), n);
      top_confusions[b].push_back({{"expected", pair.first}, {"got", pair.second}, {"n", n}});
    }
    std::printf("\n");
  }

  nlohmann::json overall = nlohmann::json::object();
  for (const std::string& b : kBuckets) overall[b] = TallyJson(per_bucket[b]);
  overall["at_least_20_chars"] = TallyJson(all_20);
  overall["at_least_50_chars"] = TallyJson(all_50);
  return {{"languages_at_99_percent", languages_at_target},
          {"languages_at_99_percent_candidates", languages_at_target_candidates},
          {"languages_at_99_percent_from_50_chars", languages_at_99_from_50},
          {"languages_at_99_percent_from_50_chars_candidates", languages_at_99_from_50_candidates},
          {"overall", overall},
          {"accuracy_by_confidence", calibration},
          {"languages", languages},
          {"confusions", top_confusions},
          {"errors", errors}};
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::vector<Sample> samples = ReadSamples(absl::GetFlag(FLAGS_data));
  std::set<std::string> candidate_set = {"en"};
  for (const Sample& s : samples) candidate_set.insert(s.language);
  const std::vector<std::string> candidates(candidate_set.begin(), candidate_set.end());
  nlohmann::json subsets = nlohmann::json::object();
  for (const std::string subset : {"all", "prose"}) {
    subsets[subset] = Report(subset, samples, candidates);
  }
  nlohmann::json out = {
      {"benchmark", "language_detection"},
      {"detector", "CLD2 via transerve::text::DetectLanguages"},
      {"data", absl::GetFlag(FLAGS_data)},
      {"buckets",
       {{"tiny", "< 20 characters"},
        {"short", "20-49"},
        {"medium", "50-149"},
        {"long", ">= 150, strings of one catalog joined"}}},
      {"candidates", candidates},
      {"subsets", subsets},
  };
  const std::string json_path = absl::GetFlag(FLAGS_json);
  if (!json_path.empty()) {
    std::ofstream(json_path) << out.dump(1) << "\n";
    std::printf("wrote %s\n", json_path.c_str());
  }
  return 0;
}
