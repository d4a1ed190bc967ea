// Where unit tests find the source tree and its tests/data. Only
// test_paths.cpp is compiled with those absolute paths, so every other test
// object is the same in any clone and ccache can reuse it from another folder.
#pragma once

#include <string>

namespace xft::test {

std::string source_dir();  // the tree's root
std::string data_dir();    // source_dir() + "/tests/data"

}  // namespace xft::test
