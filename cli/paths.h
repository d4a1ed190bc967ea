// Where this binary lives: the tokenizer and other files shipped beside it
// are found from there (../third_party/...), in the build tree or installed.
#pragma once

#include <string>

namespace xft::cli {

// The directory of /proc/self/exe; empty when it cannot be read.
std::string binary_dir();

// The source tree this binary was built from (a build-tree binary finds the
// shipped tokenizer there). Only paths.cpp is compiled with that path, so the
// other objects are the same in any clone and ccache reuses them.
std::string source_tree_dir();

}  // namespace xft::cli
