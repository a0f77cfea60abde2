// Reads a whole file (models, tokenizers, certificates, token lists), with errors that name it,
// writes one (the checkpoint writers of tests and tools), and says whether one is there.
#ifndef TRANSERVE_MODEL_CORE_READ_FILE_H_
#define TRANSERVE_MODEL_CORE_READ_FILE_H_

#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace transerve {

// The contents of `path`. A missing file is NOT_FOUND, anything else unreadable (a directory, a
// FIFO or device, no permission, an I/O error) INVALID_ARGUMENT; `what` describes the file in
// the message, e.g. "SentencePiece model". The one whole-file reader of the engine and server.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, const char* what);

// Creates or truncates `path` and writes `bytes`: INVALID_ARGUMENT when it cannot be created,
// DATA_LOSS when the write or the close fails; messages name the file.
absl::Status WriteWholeFile(const std::string& path, std::string_view bytes);

// Whether `path` names a regular file (or a link to one); false for a folder, nothing there, or
// any error asking.
bool IsRegularFile(const std::filesystem::path& path);

}  // namespace transerve

#endif  // TRANSERVE_MODEL_CORE_READ_FILE_H_
