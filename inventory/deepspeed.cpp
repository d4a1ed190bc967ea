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
std::vector<Word> split_words(const std::string& line) {
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

class Reader {
 public:
  Reader(const std::string& path, const ImportOptions& options) : path_(path), options_(options), errors_(path) {}

  Expected<ImportResult> run(const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    for (int number = 0; std::getline(lines, line); ++number) read_line(split_words(line), number);
    if (inventory_.hosts.empty() && errors_.empty())
      errors_.add(0, 0, "hosts", "the file lists no hosts (write one NAME slots=N line per host)");
    if (!errors_.empty()) return errors_.to_error();
    inventory_.path = path_;
    apply_password_env(inventory_, options_);
    return ImportResult{std::move(inventory_), {}};
  }

 private:
  void read_line(const std::vector<Word>& words, int number) {
    if (words.empty()) return;
    const Word& name = words[0];
    if (name.text[0] == '[') {
      errors_.add(number, name.column, "host",
                  shown(name.text) + " is an Ansible section, not a hostfile line (import it with --format ansible)");
      return;
    }
    if (words.size() < 2 || words[1].text.rfind("slots=", 0) != 0) {
      int column = words.size() < 2 ? name.column : words[1].column;
      errors_.add(number, column, "host", shown(name.text) + " has no slots=N (" + kLineForm + ")");
      return;
    }
    if (words.size() > 2) {
      errors_.add(number, words[2].column, "host",
                  shown(words[2].text) + " after slots=N is not understood (" + kLineForm + ")");
      return;
    }
    auto ranks = read_slots(words[1], number);
    if (!check_name(name, number) || !ranks) return;
    auto [first, fresh] = lines_.emplace(name.text, number + 1);
    if (!fresh) {
      errors_.add(number, name.column, "host",
                  "duplicate host " + quoted_value(name.text) + " (also at line " + std::to_string(first->second) +
                      "; keep one line per host)");
      return;
    }
    Host host;
    host.name = host.address = name.text;
    host.ranks = Ranks{RanksKind::count, *ranks};
    host.line = number + 1;
    inventory_.hosts.push_back(std::move(host));
  }

  // DeepSpeed reaches the host by this word, so it is both name and address.
  bool check_name(const Word& name, int number) {
    Problem problem = check_host_name(name.text);
    if (!problem) problem = check_address(name.text);
    if (problem) errors_.add(number, name.column, "host", *problem);
    return !problem;
  }

  std::optional<int> read_slots(const Word& word, int number) {
    std::string digits = word.text.substr(6);
    int column = word.column + 6;
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
      errors_.add(number, column, "slots", quoted_value(digits) + " is not a number (write slots=N with N >= 1)");
      return std::nullopt;
    }
    size_t significant = std::min(digits.find_first_not_of('0'), digits.size());
    if (digits.size() - significant > 6) {
      errors_.add(number, column, "slots", digits + " is too large (use the number of ranks for this host, e.g. 2)");
      return std::nullopt;
    }
    int count = std::stoi(digits);
    if (count < 1) {
      errors_.add(number, column, "slots", digits + " is below 1 (xftctl starts at least one rank per host)");
      return std::nullopt;
    }
    return count;
  }

  std::string path_;
  ImportOptions options_;
  ErrorList errors_;
  Inventory inventory_;
  std::map<std::string, int> lines_;  // host name -> 1-based line
};

}  // namespace

Expected<ImportResult> import_deepspeed(const std::string& text, const std::string& path,
                                        const ImportOptions& options) {
  return Reader(path, options).run(text);
}

}  // namespace xft::inventory
