#include "tests/unit/support/test_paths.h"

namespace xft::test {

std::string source_dir() { return XFT_SOURCE_DIR; }
std::string data_dir() { return XFT_TEST_DATA_DIR; }

}  // namespace xft::test
