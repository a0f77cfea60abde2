// Normalization in SentencePiece's order: drop leading whitespace, add the dummy prefix, map each
// unit through the rules while collapsing runs of spaces, escape spaces, drop trailing whitespace.
#include "model/tokenizer/normalizer.h"

#include "absl/status/status.h"
#include "model/tokenizer/sentencepiece_model.pb.h"
#include "model/tokenizer/utf8.h"

namespace transerve {

absl::StatusOr<Normalizer> Normalizer::Create(
    const spm::NormalizerSpec& spec, bool treat_whitespace_as_suffix,
    const std::vector<std::string_view>& user_defined_symbols) {
  Normalizer n;
  auto charsmap = PrecompiledCharsMap::Parse(spec.precompiled_charsmap());
  if (!charsmap.ok()) return charsmap.status();
  n.charsmap_ = *std::move(charsmap);
  std::vector<std::pair<std::string_view, int32_t>> entries;
  entries.reserve(user_defined_symbols.size());
  for (std::string_view s : user_defined_symbols) entries.emplace_back(s, 0);
  n.user_defined_ = PieceTrie::Build(std::move(entries));
  n.add_dummy_prefix_ = spec.add_dummy_prefix();
  n.remove_extra_whitespaces_ = spec.remove_extra_whitespaces();
  n.escape_whitespaces_ = spec.escape_whitespaces();
  n.treat_whitespace_as_suffix_ = treat_whitespace_as_suffix;
  return n;
}

std::pair<std::string_view, size_t> Normalizer::NormalizePrefix(std::string_view input) const {
  if (input.empty()) return {};
  if (!user_defined_.empty()) {
    const size_t len = user_defined_.LongestPrefix(input, 0);
    if (len > 0) return {input.substr(0, len), len};
  }
  size_t length = 0;
  std::string_view replacement;
  if (charsmap_.LongestMatch(input, &length, &replacement)) return {replacement, length};
  const size_t len = utf8::ValidCharLen(input);
  if (len == 0) return {utf8::kReplacementChar, 1};
  return {input.substr(0, len), len};
}

void Normalizer::Normalize(std::string_view input, std::string* out) const {
  out->clear();
  if (remove_extra_whitespaces_) {
    while (!input.empty()) {
      const auto [replacement, consumed] = NormalizePrefix(input);
      if (replacement != " ") break;
      input.remove_prefix(consumed);
    }
  }
  if (input.empty()) return;

  out->reserve(input.size() * 3);
  const std::string_view space = escape_whitespaces_ ? kSpaceSymbol : std::string_view(" ");
  if (!treat_whitespace_as_suffix_ && add_dummy_prefix_) out->append(space);

  // Whether the output so far ends with a space that later spaces should collapse into.
  bool is_prev_space = remove_extra_whitespaces_;
  while (!input.empty()) {
    auto [replacement, consumed] = NormalizePrefix(input);
    while (is_prev_space && !replacement.empty() && replacement.front() == ' ') {
      replacement.remove_prefix(1);
    }
    if (!replacement.empty()) {
      for (const char c : replacement) {
        if (c == ' ' && escape_whitespaces_) {
          out->append(kSpaceSymbol);
        } else {
          out->push_back(c);
        }
      }
      is_prev_space = replacement.back() == ' ';
    }
    input.remove_prefix(consumed);
    if (!remove_extra_whitespaces_) is_prev_space = false;
  }

  if (remove_extra_whitespaces_) {
    // As upstream: this also trims literal U+2581 characters the input ended with.
    while (out->size() >= space.size() &&
           std::string_view(*out).substr(out->size() - space.size()) == space) {
      out->resize(out->size() - space.size());
    }
  }
  if (treat_whitespace_as_suffix_ && add_dummy_prefix_) out->append(space);
}

}  // namespace transerve
