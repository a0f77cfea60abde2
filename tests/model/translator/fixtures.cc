#include "tests/model/translator/fixtures.h"

#include <gtest/gtest.h>

#include <fstream>

namespace transerve::testing {

std::string FixtureModelDir(const std::string& name) {
  return std::string(TRANSERVE_SOURCE_DIR) + "/tests/fixtures/" + name + "/model";
}

nlohmann::json LoadExpected(const std::string& name) {
  const std::string path =
      std::string(TRANSERVE_SOURCE_DIR) + "/tests/fixtures/" + name + "/expected.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path
                         << " (regenerate with tools/reference/regenerate_fixtures.sh)";
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << path << " is not valid JSON";
  return j;
}

}  // namespace transerve::testing
