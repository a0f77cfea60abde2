#include "server/auth.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "model/core/read_file.h"

namespace transerve {
namespace {

constexpr std::string_view kScheme = "Bearer ";

// Equality in time linear in max(|a|, |b|), with no early exit.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

}  // namespace

bool BearerTokenAccepted(std::string_view authorization, const std::vector<std::string>& tokens) {
  if (authorization.substr(0, kScheme.size()) != kScheme) return false;
  const std::string_view presented = authorization.substr(kScheme.size());
  bool accepted = false;
  for (const std::string& token : tokens) {
    // Non-short-circuit: every token is compared.
    accepted = ConstantTimeEquals(presented, token) | accepted;
  }
  return accepted;
}

absl::StatusOr<std::vector<std::string>> ReadTokensFile(const std::string& path) {
  auto contents = ReadWholeFile(path, "the tokens file");
  if (!contents.ok()) return contents.status();
  std::vector<std::string> tokens;
  int number = 0;
  for (const absl::string_view line : absl::StrSplit(*contents, '\n')) {
    ++number;
    const absl::string_view token = absl::StripAsciiWhitespace(line);
    if (token.empty() || token.front() == '#') continue;
    if (std::any_of(token.begin(), token.end(),
                    [](char c) { return absl::ascii_isspace(static_cast<unsigned char>(c)); })) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", number, ": a token cannot contain spaces"));
    }
    tokens.emplace_back(token);
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no tokens (one per line)"));
  }
  return tokens;
}

}  // namespace transerve
