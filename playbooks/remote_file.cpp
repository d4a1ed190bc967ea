#include "playbooks/remote_file.h"

#include <cstdio>
#include <vector>

#include "playbooks/sync.h"

namespace xft::playbooks {

using launcher::Remote;
using launcher::RemoteError;

std::optional<mode_t> parse_mode(const std::string& text) {
  if (text.empty() || text.size() > 5 || text.find_first_not_of("01234567") != std::string::npos) return std::nullopt;
  return static_cast<mode_t>(std::stoul(text, nullptr, 8));
}

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

Remote<FileState> read_remote_file(launcher::RemoteSession& session, const std::string& path) {
  auto info = session.stat(path);
  if (!info) return info.error();
  FileState state;
  state.exists = info->exists;
  state.is_directory = info->is_directory;
  state.mode = info->mode;
  if (state.exists && !state.is_directory) {
    auto content = session.download(path);
    if (!content) return content.error();
    state.content = std::move(*content);
  }
  return state;
}

Remote<FileChange> ensure_remote_file(launcher::RemoteSession& session, const std::string& path,
                                      const std::string& content, std::optional<mode_t> mode, bool check,
                                      mode_t new_file_mode) {
  auto current = read_remote_file(session, path);
  if (!current) return current.error();
  if (current->is_directory)
    return RemoteError{launcher::Failure::other, path + " is a directory (remove it or choose another path)"};
  FileChange change;
  mode_t wanted_mode = mode ? *mode : (current->exists ? current->mode : new_file_mode);
  bool content_differs = !current->exists || current->content != content;
  bool mode_differs = current->exists && current->mode != wanted_mode;
  if (!current->exists) change.what = "created";
  else if (content_differs) change.what = "content";
  if (mode_differs)
    change.what += std::string(change.what.empty() ? "" : ", ") + "mode " + mode_text(current->mode) + " -> " +
                   mode_text(wanted_mode);
  change.changed = content_differs || mode_differs;
  if (content_differs) change.diff = line_diff(current->content, content);
  if (!change.changed || check) return change;
  if (content_differs) {
    auto written = session.upload(content, path, wanted_mode);
    if (!written) return written.error();
  }
  // An in-place rewrite (bind-mounted target) keeps the old mode, so the mode is set either way.
  if (mode_differs || (content_differs && current->exists)) {
    auto chmod = session.run("chmod " + mode_text(wanted_mode) + " -- " + shell_quote(path));
    if (!chmod) return chmod.error();
    if (chmod->exit_status != 0)
      return RemoteError{launcher::Failure::other, "chmod " + path + ": " + chmod->err.substr(0, chmod->err.find('\n'))};
  }
  return change;
}

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace

std::string line_diff(const std::string& before, const std::string& after) {
  auto a = split_lines(before), b = split_lines(after);
  const size_t n = a.size(), m = b.size();
  if (n * m > 4'000'000) return "(content differs; too large to show)\n";
  // Longest common subsequence table, then walk it to emit -/+/context lines.
  std::vector<std::vector<uint32_t>> lcs(n + 1, std::vector<uint32_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  struct Line {
    char tag;
    std::string text;
  };
  std::vector<Line> lines;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) lines.push_back({' ', a[i++]}), ++j;
    else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) lines.push_back({'-', a[i++]});
    else lines.push_back({'+', b[j++]});
  }
  constexpr size_t kContext = 2;
  std::string out;
  size_t last_shown = SIZE_MAX;
  for (size_t k = 0; k < lines.size(); ++k) {
    bool near_change = false;
    for (size_t d = (k >= kContext ? k - kContext : 0); d <= std::min(lines.size() - 1, k + kContext); ++d)
      if (lines[d].tag != ' ') near_change = true;
    if (!near_change) continue;
    if (last_shown != SIZE_MAX && k > last_shown + 1) out += "@@\n";
    out += lines[k].tag;
    out += lines[k].text + "\n";
    last_shown = k;
  }
  return out;
}

}  // namespace xft::playbooks
