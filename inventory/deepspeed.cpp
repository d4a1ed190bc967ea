#include "inventory/deepspeed.h"

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

#include "inventory/grammar.h"
#include "inventory/yaml_errors.h"

namespace xft::inventory {
namespace {

constexpr const char* kLineForm = "DeepSpeed hostfile lines read NAME slots=N, e.g. worker-1 slots=4";

struct Word {
  std::string text;
  int column;
};

// Whitespace-separated words with their columns, up to a `#` comment.
std::vector<Word> split_hostfile_words(const std::string& line) {
  std::vector<Word> words;
  size_t at = 0;
  while ((at = line.find_first_not_of(" \t\r", at)) != std::string::npos) {
    if (line[at] == '#') break;
    size_t end = std::min(line.find_first_of(" \t\r", at), line.size());
    words.push_back({line.substr(at, end - at), static_cast<int>(at)});
    at = end;
  }
  return words;
}

// A word as a message shows it: only the name of a NAME=VALUE word, whose
// value may be a password (an Ansible file read as a hostfile).
std::string shown(const std::string& word) {
  auto equals = word.find('=');
  return equals == std::string::npos ? quoted_value(word) : quoted_value(word.substr(0, equals + 1) + "...");
}

// The words after the name: slots=N, then optionally max_slots=M.
class LineReader {
 public:
  LineReader(ErrorList& errors, bool slots_required, const std::string& line_form)
      : errors_(errors), slots_required_(slots_required), line_form_(line_form) {}

  std::optional<HostfileLine> read(const std::vector<Word>& words, int number) {
    if (words.empty()) return std::nullopt;
    const Word& name = words[0];
    if (name.text[0] == '[') {
      errors_.add(number, name.column, "host",
                  shown(name.text) + " is an Ansible section, not a hostfile line (import it with --format ansible)");
      return std::nullopt;
    }
    bool has_slots = words.size() >= 2 && words[1].text.rfind("slots=", 0) == 0;
    if (words.size() >= 2 ? !has_slots : slots_required_) {
      int column = words.size() < 2 ? name.column : words[1].column;
      errors_.add(number, column, "host", shown(name.text) + " has no slots=N (" + line_form_ + ")");
      return std::nullopt;
    }
    size_t known = has_slots ? 2 : 1;
    if (has_slots && words.size() > 2 && words[2].text.rfind("max_slots=", 0) == 0) {
      if (!read_count(words[2], 10, number, "max_slots")) return std::nullopt;
      known = 3;
    }
    if (words.size() > known) {
      errors_.add(number, words[known].column, "host",
                  shown(words[known].text) + " after slots=N is not understood (" + line_form_ + ")");
      return std::nullopt;
    }
    HostfileLine line{name.text, std::nullopt, number, name.column};
    if (has_slots) {
      line.slots = read_count(words[1], 6, number, "slots");
      if (!line.slots) return std::nullopt;
    }
    auto [first, fresh] = lines_.emplace(name.text, number + 1);
    if (!fresh) {
      errors_.add(number, name.column, "host",
                  "duplicate host " + quoted_value(name.text) + " (also at line " + std::to_string(first->second) +
                      "; keep one line per host)");
      return std::nullopt;
    }
    return line;
  }

 private:
  // `key=N` with N >= 1; `prefix` is the length of "key=".
  std::optional<int> read_count(const Word& word, size_t prefix, int number, const std::string& key) {
    std::string digits = word.text.substr(prefix);
    int column = word.column + static_cast<int>(prefix);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
      errors_.add(number, column, key,
                  quoted_value(digits) + " is not a number (write " + key + "=N with N >= 1)");
      return std::nullopt;
    }
    size_t significant = std::min(digits.find_first_not_of('0'), digits.size());
    if (digits.size() - significant > 6) {
      errors_.add(number, column, key, digits + " is too large (use the number of ranks for this host, e.g. 2)");
      return std::nullopt;
    }
    int count = std::stoi(digits);
    if (count < 1) {
      errors_.add(number, column, key, digits + " is below 1 (xftctl starts at least one rank per host)");
      return std::nullopt;
    }
    return count;
  }

  ErrorList& errors_;
  bool slots_required_;
  std::string line_form_;
  std::map<std::string, int> lines_;  // host name -> 1-based line
};

class Reader {
 public:
  Reader(const std::string& path, const ImportOptions& options) : path_(path), options_(options), errors_(path) {}

  Expected<ImportResult> run(const std::string& text) {
    for (const auto& line : read_hostfile_lines(text, errors_, true, kLineForm)) {
      if (!check_name(line)) continue;
      Host host;
      host.name = host.address = line.name;
      host.ranks = Ranks{RanksKind::count, *line.slots};
      host.line = line.line + 1;
      inventory_.hosts.push_back(std::move(host));
    }
    if (inventory_.hosts.empty() && errors_.empty())
      errors_.add(0, 0, "hosts", "the file lists no hosts (write one NAME slots=N line per host)");
    if (!errors_.empty()) return errors_.to_error();
    inventory_.path = path_;
    apply_password_env(inventory_, options_);
    return ImportResult{std::move(inventory_), {}};
  }

 private:
  // DeepSpeed reaches the host by this word, so it is both name and address.
  bool check_name(const HostfileLine& line) {
    Problem problem = check_host_name(line.name);
    if (!problem) problem = check_address(line.name);
    if (problem) errors_.add(line.line, line.column, "host", *problem);
    return !problem;
  }

  std::string path_;
  ImportOptions options_;
  ErrorList errors_;
  Inventory inventory_;
};

}  // namespace

std::vector<HostfileLine> read_hostfile_lines(const std::string& text, ErrorList& errors, bool slots_required,
                                              const std::string& line_form) {
  LineReader reader(errors, slots_required, line_form);
  std::vector<HostfileLine> lines;
  std::istringstream in(text);
  std::string line;
  for (int number = 0; std::getline(in, line); ++number)
    if (auto read = reader.read(split_hostfile_words(line), number)) lines.push_back(std::move(*read));
  return lines;
}

Expected<ImportResult> import_deepspeed(const std::string& text, const std::string& path,
                                        const ImportOptions& options) {
  return Reader(path, options).run(text);
}

}  // namespace xft::inventory
