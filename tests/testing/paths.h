// The checkout's source and build directories, for tests that read fixtures or run the built
// binaries. Only paths.cc is compiled with the absolute paths (as defines): every other test
// object's compile command is then the same in any checkout's folder, so ccache hits objects
// built in another one.
#pragma once

#include <string>

namespace transerve::testing {

// The repository's root (CMake's PROJECT_SOURCE_DIR), without a trailing slash.
const std::string& SourceDir();
// The build directory (CMake's PROJECT_BINARY_DIR), without a trailing slash.
const std::string& BinaryDir();

}  // namespace transerve::testing
