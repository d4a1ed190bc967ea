// Where this binary lives: the tokenizer and other files shipped beside it
// are found from there (../third_party/...), in the build tree or installed.
#pragma once

#include <string>

namespace xft::cli {

// The directory of /proc/self/exe; empty when it cannot be read.
std::string binary_dir();

}  // namespace xft::cli
