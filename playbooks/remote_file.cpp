#include "playbooks/remote_file.h"

#include <cstdio>

#include "playbooks/sync.h"
#include "playbooks/unified_diff.h"

namespace xft::playbooks {

using remote::Remote;
using remote::RemoteError;

std::optional<mode_t> parse_mode(const std::string& text) {
  if (text.empty() || text.size() > 5 || text.find_first_not_of("01234567") != std::string::npos) return std::nullopt;
  return static_cast<mode_t>(std::stoul(text, nullptr, 8));
}

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

Remote<FileState> read_remote_file(remote::RemoteSession& session, const std::string& path) {
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

Remote<FileChange> ensure_remote_file(remote::RemoteSession& session, const std::string& path,
                                      const std::string& content, std::optional<mode_t> mode, bool check,
                                      mode_t new_file_mode) {
  auto current = read_remote_file(session, path);
  if (!current) return current.error();
  if (current->is_directory)
    return RemoteError{remote::Failure::other, path + " is a directory (remove it or choose another path)"};
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
  if (content_differs) change.diff = unified_diff(current->content, content, path);
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
      return RemoteError{remote::Failure::other, "chmod " + path + ": " + chmod->err.substr(0, chmod->err.find('\n'))};
  }
  return change;
}

}  // namespace xft::playbooks
