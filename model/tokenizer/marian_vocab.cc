// vocab.json is read with nlohmann's SAX interface: it keeps keys in file order and duplicates
// visible (a DOM would sort and collapse them) and never builds a 60k-node tree just to walk it.
#include "model/tokenizer/marian_vocab.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/core/read_file.h"
#include "model/tokenizer/absl_string_view.h"

namespace transerve {
namespace {

// Accepts exactly one flat object of string -> integer; anything else stops the parse with a
// message.
class VocabSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::vector<std::pair<std::string, int64_t>> entries;
  std::string error;

  bool null() override { return Unexpected("null"); }
  bool boolean(bool) override { return Unexpected("a boolean"); }
  bool number_integer(number_integer_t v) override { return Value(v); }
  bool number_unsigned(number_unsigned_t v) override {
    return v > static_cast<number_unsigned_t>(MarianVocab::kMaxId) ? OutOfRange(std::to_string(v))
                                                                   : Value(static_cast<int64_t>(v));
  }
  bool number_float(number_float_t, const string_t& s) override {
    return Unexpected(absl::StrCat("the non-integer number ", s));
  }
  bool string(string_t&) override { return Unexpected("a string"); }
  bool binary(binary_t&) override { return Unexpected("binary data"); }
  bool start_object(std::size_t) override {
    if (depth_++ == 0) return true;
    return Unexpected("a nested object");
  }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override { return Unexpected("an array"); }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    error = absl::StrCat("invalid JSON at byte ", position, ": ", ex.what());
    return false;
  }

 private:
  bool Value(int64_t v) {
    if (depth_ != 1) return Unexpected("a number");
    if (v < 0 || v > MarianVocab::kMaxId) return OutOfRange(std::to_string(v));
    entries.emplace_back(std::move(key_), v);
    return true;
  }
  bool OutOfRange(const std::string& v) {
    error = absl::StrCat("id ", v, " of \"", key_, "\" is outside [0, ", MarianVocab::kMaxId, "]");
    return false;
  }
  bool Unexpected(std::string_view what) {
    error = depth_ == 0
                ? absl::StrCat("expected a JSON object of piece -> id, found ", AbslView(what))
                : absl::StrCat("expected an integer id for \"", key_, "\", found ", AbslView(what));
    return false;
  }

  int depth_ = 0;
  std::string key_;
};

}  // namespace

absl::StatusOr<MarianVocab> MarianVocab::LoadFile(const std::string& path) {
  absl::StatusOr<std::string> json = ReadWholeFile(path, "vocabulary");
  if (!json.ok()) return json.status();
  return Parse(*json, path);
}

absl::StatusOr<MarianVocab> MarianVocab::Parse(std::string_view json, std::string_view name) {
  VocabSax sax;
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(json, &sax);
  } catch (const std::exception& e) {  // nlohmann reports through the handler; this is a backstop
    sax.error = e.what();
  }
  if (!ok || !sax.error.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid vocabulary ", AbslView(name), ": ",
                     sax.error.empty() ? "expected a JSON object of piece -> id" : sax.error));
  }

  MarianVocab vocab;
  vocab.ids_.reserve(sax.entries.size());
  // Keys in order of first appearance, as a Python dict iterates them.
  std::vector<std::string_view> order;
  order.reserve(sax.entries.size());
  int32_t max_id = -1;
  for (const auto& [piece, id] : sax.entries) {
    if (vocab.ids_.insert_or_assign(piece, static_cast<int32_t>(id)).second) order.push_back(piece);
    max_id = std::max(max_id, static_cast<int32_t>(id));
  }
  if (vocab.ids_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid vocabulary ", AbslView(name), ": it is empty"));
  }
  vocab.pieces_.resize(max_id + 1);
  vocab.has_piece_.assign(max_id + 1, false);
  for (const std::string_view piece : order) {
    const int32_t id = vocab.ids_.find(AbslView(piece))->second;  // the key's final id
    vocab.pieces_[id] = std::string(piece);
    vocab.has_piece_[id] = true;
  }
  return vocab;
}

MarianVocab MarianVocab::FromTokens(const std::vector<std::string>& tokens) {
  MarianVocab vocab;
  vocab.ids_.reserve(tokens.size());
  vocab.pieces_ = tokens;
  vocab.has_piece_.assign(tokens.size(), true);
  for (size_t id = 0; id < tokens.size(); ++id) {
    vocab.ids_.try_emplace(tokens[id], static_cast<int32_t>(id));
  }
  return vocab;
}

}  // namespace transerve
