// Making a remote file hold given content and mode, the one write path of
// every file-shaped task kind: read, compare, and only on a difference write
// a temp file and rename it (a bind-mounted target is rewritten in place by
// the transport), so a second run changes nothing.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "remote/transport.h"

namespace xft::playbooks {

struct FileState {
  bool exists = false;
  bool is_directory = false;
  mode_t mode = 0;
  std::string content;
};

remote::Remote<FileState> read_remote_file(remote::RemoteSession& session, const std::string& path);

struct FileChange {
  bool changed = false;
  std::string what;  // "created", "content", "mode 0644 -> 0600", joined by ", "
  std::string diff;  // a unified diff when the content changed (unified_diff.h)
};

// `mode` empty: an existing file keeps its mode, a new one gets `new_file_mode`.
remote::Remote<FileChange> ensure_remote_file(remote::RemoteSession& session, const std::string& path,
                                                const std::string& content, std::optional<mode_t> mode, bool check,
                                                mode_t new_file_mode = 0644);

// "0600" -> 0600; an error names the text.
std::optional<mode_t> parse_mode(const std::string& text);
std::string mode_text(mode_t mode);

}  // namespace xft::playbooks
