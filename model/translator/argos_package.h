// Argos Translate packages, as LibreTranslate installs them: a folder holding metadata.json
// (from_code, to_code), model/ (a CTranslate2 model directory) and sentencepiece.model; or the
// same folder zipped into a .argosmodel file. A package folder is a model directory of its own
// (model_directory.h reads its model/ and the SentencePiece model beside it); an archive is
// unpacked first.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace transerve {

// Whether `dir` is an unpacked Argos package: metadata.json beside model/model.bin.
bool IsArgosPackage(const std::string& dir);

// The folder of `dir` that holds the weights: model/ in an Argos package, else `dir` itself.
std::string WeightsFolder(const std::string& dir);

// Whether `path` names an Argos package archive (a regular file ending in .argosmodel).
bool IsArgosArchive(const std::string& path);

struct UnpackLimits {
  int64_t max_entries = 10'000;
  int64_t max_total_bytes = int64_t{16} << 30;  // a package is a few hundred MB; this stops a bomb
};

// Unpacks the archive `archive` into the folder `into` (created; must not exist yet) and returns
// the package folder inside it: the one folder holding metadata.json, at the top or one level
// down (packages zip their folder). Refused with the reason, leaving nothing behind: not a zip,
// an entry whose name leaves `into` (absolute, "..") or is not plain, more entries or bytes than
// `limits`, an entry longer than the archive says, or no package inside.
absl::StatusOr<std::string> UnpackArgosArchive(const std::string& archive, const std::string& into,
                                               const UnpackLimits& limits = {});

}  // namespace transerve
