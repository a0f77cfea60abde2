#include "tests/model/translator/fixtures.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/testing/paths.h"

namespace transerve::testing {

std::string FixtureModelDir(const std::string& name) {
  return SourceDir() + "/tests/fixtures/" + name + "/model";
}

nlohmann::json LoadExpected(const std::string& name) {
  const std::string path = SourceDir() + "/tests/fixtures/" + name + "/expected.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path
                         << " (regenerate with tools/reference/regenerate_fixtures.sh)";
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << path << " is not valid JSON";
  return j;
}

}  // namespace transerve::testing
