#include "cli/paths.h"

#include <filesystem>
#include <system_error>

namespace xft::cli {

std::string binary_dir() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

std::string source_tree_dir() { return XFT_SOURCE_DIR; }

}  // namespace xft::cli
