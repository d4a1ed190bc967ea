// The shared hostile-value corpus (tests/data/hostile/values.tsv) for unit
// tests, and a temp dir whose PWNED* files tell whether anything ran. Values
// that name /tmp/PWNED are pointed into that dir, so a test sees its own
// markers only, whatever else runs on the machine.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace xft::playbooks::testing {

struct HostileRow {
  std::string field, expect, value;
};

// "\n" "\t" "\r" "\\" "\x1b" as the corpus header describes them.
inline std::string decode_c_escapes(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    char c = text[++i];
    if (c == 'n') out += '\n';
    else if (c == 't') out += '\t';
    else if (c == 'r') out += '\r';
    else if (c == '\\') out += '\\';
    else if (c == 'x' && i + 2 < text.size()) out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16)), i += 2;
    else out += std::string("\\") + c;
  }
  return out;
}

inline std::vector<HostileRow> hostile_rows() {
  std::ifstream in(std::string(XFT_SOURCE_DIR) + "/tests/data/hostile/values.tsv");
  std::vector<HostileRow> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    auto first = line.find('\t'), second = line.find('\t', first + 1);
    rows.push_back({line.substr(0, first), line.substr(first + 1, second - first - 1),
                    decode_c_escapes(line.substr(second + 1))});
  }
  return rows;
}

// The `literal` values of `field` (for extra_var: the VALUE of NAME=VALUE).
inline std::vector<std::string> literal_values(const std::string& field) {
  std::vector<std::string> values;
  for (const auto& row : hostile_rows()) {
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
