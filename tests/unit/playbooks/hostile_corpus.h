// The corpus's literal values for the playbook tests, and a temp dir whose
// PWNED* files tell whether anything ran. Values that name /tmp/PWNED are
// pointed into that dir, so a test sees its own markers only.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/unit/hostile_corpus.h"

namespace xft::playbooks::testing {

// The `literal` values of `field` (for extra_var: the VALUE of NAME=VALUE).
inline std::vector<std::string> literal_values(const std::string& field) {
  std::vector<std::string> values;
  for (const auto& row : xft::testing::read_hostile_corpus()) {
    if (row.field != field || row.expect != "literal") continue;
    values.push_back(field == "extra_var" ? row.value.substr(row.value.find('=') + 1) : row.value);
  }
  return values;
}

// A temp dir: markers land at its top, a test's own files go under work().
class MarkerDir {
 public:
  MarkerDir() {
    char name[] = "/tmp/xft-escape-test.XXXXXX";
    path_ = ::mkdtemp(name);
    std::filesystem::create_directory(work());
  }
  ~MarkerDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string work() const { return path_ + "/work"; }
  // `value` with every /tmp/PWNED pointed into this dir.
  std::string aim(std::string value) const {
    for (size_t at = value.find("/tmp/PWNED"); at != std::string::npos; at = value.find("/tmp/PWNED", at + 1))
      value.replace(at, 4, path_);
    return value;
  }
  // The PWNED* entries at the top: empty when nothing ran. (A hostile path
  // made literally under work() may hold "PWNED" in a deeper name.)
  std::vector<std::string> markers() const {
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(path_))
      if (entry.path().filename().string().rfind("PWNED", 0) == 0) found.push_back(entry.path().string());
    return found;
  }

 private:
  std::string path_;
};

}  // namespace xft::playbooks::testing
