#include "model/translator/vocabulary_map.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace transerve {
namespace {

// The parts of `text` between `separator`s, empty ones included.
std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end == std::string_view::npos ? end : end - begin));
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

}  // namespace

absl::StatusOr<VocabularyMap> VocabularyMap::Parse(std::string_view text, std::string_view name,
                                                   const MarianTokenizer& tokenizer) {
  absl::flat_hash_map<std::string, int32_t> target_ids;
  for (int64_t id = tokenizer.target_vocab_size() - 1; id >= 0; --id) {
    // Of pieces given twice the lowest id, as a lookup of the vocabulary finds it.
    target_ids[std::string(tokenizer.TargetIdToPiece(static_cast<int32_t>(id)))] =
        static_cast<int32_t>(id);
  }
  auto to_id = [&](std::string_view piece) {
    const auto it = target_ids.find(std::string(piece));
    return it == target_ids.end() ? tokenizer.unk_id() : it->second;
  };
  VocabularyMap map;
  map.tokenizer_ = &tokenizer;
  map.always_ = {tokenizer.eos_id(), tokenizer.unk_id()};
  if (tokenizer.pad_id() >= 0) map.always_.push_back(tokenizer.pad_id());
  int line_number = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    if (tab == std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(name), " line ", line_number,
                       ": no tab between the source n-gram and its targets"));
    }
    const std::string_view source = line.substr(0, tab);
    std::vector<int32_t> targets;
    for (std::string_view piece : Split(line.substr(tab + 1), ' ')) {
      if (!piece.empty()) targets.push_back(to_id(piece));
    }
    if (source.empty()) {
      map.always_.insert(map.always_.end(), targets.begin(), targets.end());
      continue;
    }
    const size_t n = static_cast<size_t>(std::count(source.begin(), source.end(), ' ')) + 1;
    if (map.rules_.size() < n) map.rules_.resize(n);
    std::vector<int32_t>& to = map.rules_[n - 1][std::string(source)];
    to.insert(to.end(), targets.begin(), targets.end());
  }
  std::sort(map.always_.begin(), map.always_.end());
  map.always_.erase(std::unique(map.always_.begin(), map.always_.end()), map.always_.end());
  return map;
}

absl::StatusOr<VocabularyMap> VocabularyMap::Load(const std::string& model_dir,
                                                  const MarianTokenizer& tokenizer) {
  const std::filesystem::path path = std::filesystem::path(model_dir) / "vmap.txt";
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path.string(), " not found"));
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path.string(), tokenizer);
}

std::vector<int32_t> VocabularyMap::Candidates(std::span<const int32_t> source_ids,
                                               std::span<const int32_t> extra) const {
  std::vector<int32_t> out = always_;
  out.insert(out.end(), extra.begin(), extra.end());
  std::vector<std::string_view> pieces;
  pieces.reserve(source_ids.size());
  for (int32_t id : source_ids) pieces.push_back(tokenizer_->SourceIdToPiece(id));
  std::string ngram;
  for (size_t i = 0; i < pieces.size(); ++i) {
    ngram.clear();
    for (size_t n = 0; n < rules_.size() && i + n < pieces.size(); ++n) {
      if (n > 0) ngram += ' ';
      ngram.append(pieces[i + n]);
      const auto it = rules_[n].find(ngram);
      if (it != rules_[n].end()) out.insert(out.end(), it->second.begin(), it->second.end());
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

size_t VocabularyMap::rules() const {
  size_t n = 0;
  for (const auto& r : rules_) n += r.size();
  return n;
}

}  // namespace transerve
