// Distinct models made from a fixture, for the model repository's tests and benchmarks: a
// variant is the fixture's directory with every weight perturbed by a seeded random factor, so
// each seed translates differently (and one seed always gives the same bytes); a broken model
// is the fixture with its weights cut short, which no loader accepts.
//
// Every write is atomic for a server that polls the directory: the new files are written in a
// staging directory beside the destination's parent (DEST's parent + ".staging", the same file
// system, never inside a repository the server scans) and then renamed into place. A new
// destination is one directory rename. An existing one gets its files renamed in one by one,
// model.safetensors last: a directory cannot be swapped for another in one rename, and moving
// the old one away first would leave a moment with no model there (a poll then sees a
// removal), while with the weights last every state between two renames is a whole model.
#pragma once

#include <cstdint>
#include <filesystem>

#include "absl/status/status.h"

namespace transerve::testing {

// The tiny fixture model the variants start from.
std::filesystem::path TinyFixtureModel();

// Writes `fixture_dir`'s files to `dest` (created, or its files replaced as above) with every
// float tensor of model.safetensors scaled element-wise by 1 + N(0, `spread`) drawn from
// `seed`; the sinusoidal position tables stay (the loader requires them exact), tensors of
// other dtypes are copied.
absl::Status WriteModelVariant(const std::filesystem::path& fixture_dir,
                               const std::filesystem::path& dest, uint32_t seed,
                               float spread = 0.4f);

// Writes `fixture_dir`'s files to `dest` (created or replaced as above) with model.safetensors
// truncated to half its size: the header is intact, the data is not (DATA_LOSS on load).
absl::Status WriteBrokenModel(const std::filesystem::path& fixture_dir,
                              const std::filesystem::path& dest);

// Moves `dest` out of its parent in one rename (a repository's poll sees it gone at once) and
// deletes it.
absl::Status RemoveModelDirectory(const std::filesystem::path& dest);

}  // namespace transerve::testing
