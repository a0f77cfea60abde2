// Strict JSON parsing for checkpoint files: rejects duplicate object keys (which nlohmann would
// silently collapse to the last one) and absurd nesting, and never throws.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace transerve {

// Model files nest at most a few levels; a cap keeps hostile input from exhausting the stack in
// code that walks the result recursively.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text` as one JSON value (surrounding whitespace allowed). Errors are INVALID_ARGUMENT and
// start with `source_name`; syntax errors give the line, column and byte offset, duplicate keys
// give the key and the path of the object holding it.
absl::StatusOr<nlohmann::json> ParseJsonStrict(std::string_view text, std::string_view source_name,
                                               int max_depth = kMaxJsonDepth);

// Reads a whole file and parses it with ParseJsonStrict. A missing file is NOT_FOUND.
absl::StatusOr<nlohmann::json> ReadJsonFileStrict(const std::string& path,
                                                  int max_depth = kMaxJsonDepth);

// A short description of a JSON value for error messages: its type and, for scalars, its text
// (truncated), e.g. `string "512"`.
std::string DescribeJsonValue(const nlohmann::json& value);

}  // namespace transerve
