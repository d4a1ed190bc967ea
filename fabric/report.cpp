#include "fabric/report.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>

#include "inventory/load.h"

namespace xft::fabric {
namespace {

// Placeholders that cannot occur in a check's text.
const std::string kHost = "\x01";
const std::string kPeer = "\x02";

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; }

// `name` replaced by `by` where it stands as a whole word ("h1" not inside "h10").
std::string replace_word(const std::string& text, const std::string& name, const std::string& by) {
  if (name.empty()) return text;
  std::string out;
  std::size_t at = 0;
  while (true) {
    std::size_t found = text.find(name, at);
    if (found == std::string::npos) break;
    std::size_t end = found + name.size();
    // A trailing '.' ends a sentence, not a name.
    bool before = found == 0 || !name_char(text[found - 1]);
    bool after = end == text.size() || !name_char(text[end]) || (text[end] == '.' && (end + 1 == text.size() || !name_char(text[end + 1])));
    out += text.substr(at, found - at) + (before && after ? by : name);
    at = end;
  }
  return out + text.substr(at);
}

std::string replace_all(std::string text, const std::string& what, const std::string& by) {
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + by.size()))
    text.replace(at, what.size(), by);
  return text;
}

// Figures masked: the same problem measured differently (an outlier's
// microseconds, a pair's port) is still the same problem.
std::string mask_numbers(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      out += text[i];
      continue;
    }
    while (i + 1 < text.size() && (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '.')) ++i;
    out += '#';
  }
  return out;
}

std::pair<std::string, std::string> split_pair(const std::string& pair) {
  auto arrow = pair.find(" -> ");
  if (arrow == std::string::npos) return {pair, ""};
  return {pair.substr(0, arrow), pair.substr(arrow + 4)};
}

std::vector<std::string> unique_in_order(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& name : names)
    if (seen.insert(name).second) out.push_back(name);
  return out;
}

std::string pad_right(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

std::string format_value(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// Columns of text, the first left-aligned and the rest right-aligned but the last.
std::string format_columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string text;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      std::string pad(widths[c] - row[c].size(), ' ');
      bool left = c == 0 || c + 1 == row.size();
      line += left ? row[c] + (c + 1 == row.size() ? "" : pad) : pad + row[c];
      if (c + 1 < row.size()) line += "  ";
    }
    text += line + "\n";
  }
  return text;
}

// `text` in lines of at most `width` columns, broken at spaces (a word, a
// command or a path stays whole and copyable) or, for a word longer than a
// line, after its commas; what cannot break stays whole.
std::vector<std::string> wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> words;
  for (std::size_t at = 0; at <= text.size();) {
    std::size_t space = text.find(' ', at);
    if (space == std::string::npos) space = text.size();
    std::string word = text.substr(at, space - at);
    while (word.size() > width) {
      std::size_t comma = word.rfind(',', width - 1);
      if (comma == std::string::npos) break;
      words.push_back(word.substr(0, comma + 1));
      word = word.substr(comma + 1);
      words.back() += '\x03';  // glued to the next piece without a space
    }
    words.push_back(word);
    at = space + 1;
  }
  std::vector<std::string> lines{""};
  bool glued = false;
  for (auto word : words) {
    bool glue_next = !word.empty() && word.back() == '\x03';
    if (glue_next) word.pop_back();
    std::string& line = lines.back();
    std::string joint = line.empty() || glued ? "" : " ";
    if (!line.empty() && line.size() + joint.size() + word.size() > width) lines.push_back(word);
    else line += joint + word;
    glued = glue_next;
  }
  return lines;
}

// `text` behind `lead`, continued on lines indented to where it started.
std::string wrapped(const std::string& lead, const std::string& text, std::size_t width) {
  std::size_t room = width > lead.size() + 20 ? width - lead.size() : 20;
  std::string out;
  for (const auto& line : wrap(text, room)) out += (out.empty() ? lead : std::string(lead.size(), ' ')) + line + "\n";
  return out;
}

}  // namespace

std::vector<ProblemGroup> group_problems(const std::vector<Check>& checks) {
  std::vector<ProblemGroup> groups;
  std::map<std::tuple<bool, std::string, int, std::string, std::string>, std::size_t> index;
  std::vector<std::set<std::string>> observations;  // per group, distinct
  for (bool pairs : {false, true})
    for (const auto& c : checks) {
      if (c.verdict == Verdict::pass || c.pair.empty() == pairs) continue;
      auto [from, to] = pairs ? split_pair(c.pair) : std::pair{c.host, std::string()};
      auto strip = [&](const std::string& text) { return replace_word(replace_word(text, from, kHost), to, kPeer); };
      std::string observed = strip(c.observed);
      auto key = std::make_tuple(pairs, c.check, static_cast<int>(c.verdict), mask_numbers(observed), strip(c.fix));
      auto [it, added] = index.emplace(key, groups.size());
      if (added) {
        groups.push_back({c.check, c.verdict, {}, {}, observed, std::get<4>(key)});
        observations.emplace_back();
      }
      observations[it->second].insert(observed);
      auto& group = groups[it->second];
      if (pairs) group.pairs.emplace_back(from, to);
      else group.hosts.push_back(from);
    }
  // The placeholders back as the folded sets of the group's hosts; figures
  // that differ are the first subject's, and --all or --json has each.
  for (std::size_t g = 0; g < groups.size(); ++g) {
    auto& group = groups[g];
    if (observations[g].size() > 1) {
      std::string first = group.pairs.empty() ? group.hosts.front() : group.pairs.front().first + " -> " + group.pairs.front().second;
      group.observed = first + ": " + replace_all(replace_all(group.observed, kHost, group.pairs.empty() ? first : group.pairs.front().first), kPeer,
                                                    group.pairs.empty() ? "" : group.pairs.front().second) +
                       " (" + std::to_string(observations[g].size() - 1) + " others differ: --all)";
    }
    std::vector<std::string> froms = group.hosts, tos;
    for (const auto& [from, to] : group.pairs) {
      froms.push_back(from);
      tos.push_back(to);
    }
    std::string from_set = inventory::fold_names(unique_in_order(froms));
    std::string to_set = inventory::fold_names(unique_in_order(tos));
    for (auto* text : {&group.observed, &group.fix}) *text = replace_all(replace_all(*text, kHost, from_set), kPeer, to_set);
  }
  return groups;
}

std::string fold_pairs(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::vector<std::string> hosts;
  std::set<std::pair<std::string, std::string>> unique(pairs.begin(), pairs.end());
  for (const auto& [from, to] : unique) {
    hosts.push_back(from);
    hosts.push_back(to);
  }
  hosts = unique_in_order(hosts);
  if (hosts.size() > 2 && unique.size() == hosts.size() * (hosts.size() - 1))
    return inventory::fold_names(hosts) + " (every pair)";
  // Each sender's peers folded, then senders with the same peers folded.
  std::map<std::string, std::vector<std::string>> peers_of;
  std::vector<std::string> senders;
  for (const auto& [from, to] : pairs) {
    if (!peers_of.count(from)) senders.push_back(from);
    peers_of[from].push_back(to);
  }
  std::vector<std::string> peer_sets;
  std::map<std::string, std::vector<std::string>> senders_of;
  for (const auto& from : senders) {
    std::string peers = inventory::fold_names(unique_in_order(peers_of[from]));
    if (!senders_of.count(peers)) peer_sets.push_back(peers);
    senders_of[peers].push_back(from);
  }
  std::string text;
  for (const auto& peers : peer_sets)
    text += (text.empty() ? "" : "; ") + inventory::fold_names(senders_of[peers]) + " -> " + peers;
  return text;
}

std::vector<std::string> fold_host_lines(const std::vector<std::string>& names, std::size_t width) {
  std::vector<std::string> lines;
  std::vector<std::string> current;
  for (const auto& name : names) {
    current.push_back(name);
    if (current.size() > 1 && inventory::fold_names(current).size() + 1 > width) {
      current.pop_back();
      lines.push_back(inventory::fold_names(current) + ",");
      current = {name};
    }
  }
  if (!current.empty()) lines.push_back(inventory::fold_names(current));
  return lines;
}

std::string format_problems(const std::vector<Check>& checks, std::size_t width) {
  auto groups = group_problems(checks);
  if (groups.empty()) return "";
  constexpr std::size_t kSubjectColumn = 24;
  std::vector<std::string> subjects;
  std::size_t w_subject = 4, w_check = 5;
  for (const auto& group : groups) {
    subjects.push_back(group.pairs.empty() ? inventory::fold_names(group.hosts) : fold_pairs(group.pairs));
    if (subjects.back().size() <= kSubjectColumn) w_subject = std::max(w_subject, subjects.back().size());
    w_check = std::max(w_check, group.check.size());
  }
  std::string text = pad_right("WHO", w_subject) + "  " + pad_right("CHECK", w_check) + "  VERDICT  OBSERVED\n";
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto& group = groups[i];
    std::string subject = subjects[i];
    if (subject.size() > w_subject) {
      // Hosts wrap as nodesets; a list of pair groups at its "; ".
      if (group.pairs.empty()) {
        for (const auto& line : fold_host_lines(group.hosts, width)) text += line + "\n";
      } else {
        std::string line;
        for (std::size_t at = 0; at < subject.size();) {
          std::size_t next = subject.find("; ", at);
          std::string segment = subject.substr(at, next == std::string::npos ? std::string::npos : next + 1 - at);
          if (!line.empty() && line.size() + 1 + segment.size() > width) {
            text += line + "\n";
            line.clear();
          }
          line += (line.empty() ? "" : " ") + segment;
          at = next == std::string::npos ? subject.size() : next + 2;
        }
        text += line + "\n";
      }
      subject.clear();
    }
    text += wrapped(pad_right(subject, w_subject) + "  " + pad_right(group.check, w_check) + "  " +
                        pad_right(verdict_name(group.verdict), 7) + "  ",
                    group.observed, width);
    if (!group.fix.empty()) text += wrapped(std::string(w_subject, ' ') + "  fix: ", group.fix, width);
  }
  return text;
}

std::string summary_line(const std::vector<Check>& checks, std::size_t hosts, std::size_t pairs) {
  int counts[3] = {0, 0, 0};
  for (const auto& c : checks) ++counts[static_cast<int>(c.verdict)];
  std::string text = std::to_string(hosts) + (hosts == 1 ? " host, " : " hosts, ");
  text += pairs == 0 ? "no pairs" : std::to_string(pairs) + (pairs == 1 ? " pair" : " pairs");
  return text + ": " + std::to_string(counts[0]) + " PASS, " + std::to_string(counts[1]) + " WARN, " +
         std::to_string(counts[2]) + " FAIL";
}

namespace {

std::string loaded_text(const LoadedLibfabric& loaded) { return loaded.version + " (" + loaded.path + ")"; }

}  // namespace

std::string format_measured_libfabric(const LoadedByHost& loaded, std::size_t hosts, std::size_t width) {
  std::vector<std::pair<std::string, std::vector<std::string>>> libraries;  // text -> hosts, first seen first
  for (const auto& [host, library] : loaded) {
    std::string text = loaded_text(library);
    auto same = std::find_if(libraries.begin(), libraries.end(), [&](auto& l) { return l.first == text; });
    if (same == libraries.end()) libraries.push_back({text, {host}});
    else same->second.push_back(host);
  }
  if (libraries.size() == 1 && libraries.front().second.size() == hosts)
    return "libfabric measured: " + libraries.front().first + "\n";
  constexpr std::size_t kIndent = 4;
  std::string out;
  for (const auto& [text, names] : libraries) {
    std::string lead = "libfabric measured: " + text + " on ";
    // Continuation lines are indented less than the lead, so the lead's room fits them too.
    auto sets = fold_host_lines(names, width > lead.size() + 20 ? width - lead.size() : 20);
    out += lead + sets.front() + "\n";
    for (std::size_t i = 1; i < sets.size(); ++i) out += std::string(kIndent, ' ') + sets[i] + "\n";
  }
  return out;
}

void note_measured_libfabric(std::vector<Check>& checks, const LoadedByHost& loaded) {
  for (const auto& [host, library] : loaded)
    for (auto& check : checks)
      if (check.pair.empty() && check.host == host && check.check == "libfabric") check.observed = loaded_text(library);
}

std::string format_matrix_per_host(const PairMatrix& matrix, int decimals) {
  std::vector<std::vector<std::string>> rows{{"from", "min", "median", "max", "worst to"}};
  for (std::size_t r = 0; r < matrix.hosts.size(); ++r) {
    std::vector<std::pair<double, std::size_t>> figures;
    std::vector<std::string> missing;
    for (std::size_t c = 0; c < matrix.hosts.size(); ++c) {
      if (r == c) continue;
      if (matrix.values[r][c]) figures.emplace_back(*matrix.values[r][c], c);
      else missing.push_back(matrix.hosts[c]);
    }
    std::sort(figures.begin(), figures.end());
    std::vector<std::string> row{matrix.hosts[r], "-", "-", "-"};
    if (!figures.empty()) {
      std::size_t n = figures.size();
      double median = n % 2 ? figures[n / 2].first : (figures[n / 2 - 1].first + figures[n / 2].first) / 2;
      row[1] = format_value(figures.front().first, decimals);
      row[2] = format_value(median, decimals);
      row[3] = format_value(figures.back().first, decimals);
    }
    if (!missing.empty()) {
      row.push_back("no figure: " + inventory::fold_names(missing));
    } else if (!figures.empty()) {
      // The first peer with the worst figure (figures are sorted by value, then peer).
      auto worst = figures.front();
      if (!matrix.higher_is_better)
        worst = *std::find_if(figures.begin(), figures.end(), [&](auto& f) { return f.first == figures.back().first; });
      auto [value, c] = worst;
      bool flagged = !matrix.flagged.empty() && matrix.flagged[r][c];
      row.push_back(matrix.hosts[c] + " " + format_value(value, decimals) + (flagged ? " !" : ""));
    } else {
      row.push_back("-");
    }
    rows.push_back(row);
  }
  std::string title = replace_all(matrix.title, "row: from, column: to", "per host, to the other hosts");
  return title + "\n" + format_columns(rows);
}

std::string format_matrix_for_width(const PairMatrix& matrix, int decimals, std::size_t width) {
  if (matrix.hosts.size() <= kFullMatrixHosts) {
    std::string full = format_matrix(matrix, decimals);
    std::size_t widest = 0;
    for (std::size_t at = 0; at < full.size();) {
      std::size_t end = full.find('\n', at);
      if (end == std::string::npos) end = full.size();
      widest = std::max(widest, end - at);
      at = end + 1;
    }
    if (widest <= width) return full;
  }
  return format_matrix_per_host(matrix, decimals);
}

}  // namespace xft::fabric
