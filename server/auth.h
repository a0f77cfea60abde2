// Bearer-token authentication for the Translator service: which tokens are accepted, and the
// comparison, done in time that does not depend on where a presented token first differs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace transerve {

// True when `authorization` (the metadata value) is "Bearer <t>" for one of `tokens`. Every token
// is compared in full, whatever the outcome, so timing reveals neither which prefix matched nor
// which token did; only the configured tokens' count and lengths bound the time.
bool BearerTokenAccepted(std::string_view authorization, const std::vector<std::string>& tokens);

// The tokens of a file: one per line; blank lines and lines starting with '#' are skipped,
// surrounding spaces trimmed. INVALID_ARGUMENT when it holds none or a token has inner spaces;
// ReadWholeFile's error when it cannot be read (NOT_FOUND when it does not exist).
absl::StatusOr<std::vector<std::string>> ReadTokensFile(const std::string& path);

}  // namespace transerve
