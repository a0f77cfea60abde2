// Reading the golden fixtures made by tools/reference (tests/fixtures/<name>/expected.json).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace transerve::testing {

inline const char* kFixtureNames[] = {"tiny-marian", "tiny-marian-variant"};

std::string FixtureModelDir(const std::string& name);
// Parses expected.json; fails the calling test (and returns null json) when unreadable.
nlohmann::json LoadExpected(const std::string& name);

}  // namespace transerve::testing
