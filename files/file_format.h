// The formats the file layer reads, chosen by a file name's extension, and the one entry point
// that reads a file of any of them into a text::UnitFile.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "text/unit_file.h"

namespace transerve::files {

enum class FileFormat { kSubRip, kWebVtt };

// The format a file name's extension names (any case): .srt or .vtt; nullopt for another.
std::optional<FileFormat> FormatOfName(std::string_view name);

// The extensions FormatOfName knows, for messages: ".srt, .vtt".
std::string KnownExtensions();

// INVALID_ARGUMENT, saying why, for bytes that are not a file of the format.
absl::StatusOr<std::unique_ptr<text::UnitFile>> ReadFile(std::string_view bytes, FileFormat format);

}  // namespace transerve::files
