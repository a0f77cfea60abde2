// Reads a whole file (models, tokenizers, certificates, token lists), with errors that name it.
#ifndef TRANSERVE_MODEL_CORE_READ_FILE_H_
#define TRANSERVE_MODEL_CORE_READ_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace transerve {

// The contents of `path`. A missing file is NOT_FOUND, anything else unreadable (a directory, a
// FIFO or device, no permission, an I/O error) INVALID_ARGUMENT; `what` describes the file in
// the message, e.g. "SentencePiece model". The one whole-file reader of the engine and server.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, const char* what);

}  // namespace transerve

#endif  // TRANSERVE_MODEL_CORE_READ_FILE_H_
