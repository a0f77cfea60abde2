#include "tests/testing/paths.h"

namespace transerve::testing {

const std::string& SourceDir() {
  static const std::string* const dir = new std::string(TRANSERVE_SOURCE_DIR);
  return *dir;
}

const std::string& BinaryDir() {
  static const std::string* const dir = new std::string(TRANSERVE_BINARY_DIR);
  return *dir;
}

}  // namespace transerve::testing
