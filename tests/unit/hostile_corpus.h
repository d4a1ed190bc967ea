// Reading tests/data/hostile/values.tsv (its header says the format): the
// rows, with VALUE's C escapes decoded. Shared by the inventory and playbooks
// unit tests; a malformed row fails the reading test instead of being skipped.
#pragma once

#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>
#include "tests/unit/support/test_paths.h"

namespace xft::testing {

struct HostileRow {
  int line = 0;  // 1-based line in values.tsv
  std::string field;
  std::string expect;  // "reject" or "literal"
  std::string value;   // decoded
};

// \n \t \r \\ \xHH; any other backslash sequence is a mistake in the file.
inline std::string decode_c_escapes(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    if (i + 1 >= text.size()) throw std::runtime_error("a lone backslash at the end");
    char next = text[++i];
    if (next == 'n') out += '\n';
    else if (next == 't') out += '\t';
    else if (next == 'r') out += '\r';
    else if (next == '\\') out += '\\';
    else if (next == 'x' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
             std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      throw std::runtime_error(std::string("unknown escape \\") + next);
    }
  }
  return out;
}

inline std::string hostile_corpus_path() { return xft::test::data_dir() + "/hostile/values.tsv"; }

// Every data row; throws std::runtime_error naming the line of a malformed one.
inline std::vector<HostileRow> read_hostile_corpus() {
  std::ifstream file(hostile_corpus_path());
  if (!file) throw std::runtime_error("cannot open " + hostile_corpus_path());
  std::vector<HostileRow> rows;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    auto where = "values.tsv:" + std::to_string(number) + ": ";
    size_t first = line.find('\t');
    size_t second = first == std::string::npos ? first : line.find('\t', first + 1);
    if (second == std::string::npos) throw std::runtime_error(where + "expected FIELD<tab>EXPECT<tab>VALUE");
    HostileRow row;
    row.line = number;
    row.field = line.substr(0, first);
    row.expect = line.substr(first + 1, second - first - 1);
    if (row.expect != "reject" && row.expect != "literal")
      throw std::runtime_error(where + "EXPECT is `" + row.expect + "`, not reject or literal");
    try {
      row.value = decode_c_escapes(line.substr(second + 1));
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(where + e.what());
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// "values.tsv:12: user reject `...`" for failure messages.
inline std::string describe_row(const HostileRow& row) {
  std::ostringstream out;
  out << "values.tsv:" << row.line << ": " << row.field << " " << row.expect;
  return out.str();
}

}  // namespace xft::testing
