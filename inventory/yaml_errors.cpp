#include "inventory/yaml_errors.h"

#include <algorithm>
#include <tuple>

#include "inventory/grammar.h"

namespace xft::inventory {

void ErrorList::add(int line, int column, const std::string& field, const std::string& what) {
  line = std::max(line, 0);
  column = std::max(column, 0);
  std::string text = path_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": ";
  if (!field.empty()) text += field + ": ";
  // Values are shown escaped where they are quoted; this keeps anything else
  // taken from the file (a key, a range) from splitting a problem over lines.
  entries_.push_back({line, column, one_line(text + what)});
}

Error ErrorList::to_error() const {
  auto sorted = entries_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  std::string message;
  for (const auto& entry : sorted) message += (message.empty() ? "" : "\n") + entry.text;
  return make_error(message);
}

// Optimal string alignment distance: a swapped pair ("prot" for "port")
// counts as one edit, like the typo it is.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitution = d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 0;
  for (const auto& candidate : candidates) {
    size_t distance = edit_distance(word, candidate);
    // Allow about one typo per three letters, so "adress" finds "address"
    // but "foo" does not pretend to be "port".
    size_t allowed = std::max<size_t>(1, std::min(word.size(), candidate.size()) / 3);
    if (distance <= allowed && (best.empty() || distance < best_distance)) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace xft::inventory
