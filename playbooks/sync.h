// Pushes a local directory tree to the same (or another) path on a host over
// one RemoteSession, sending only files whose size or SHA-256 differ, each
// written to a temp file and renamed, modes kept, symlinks recreated. Used by
// `xftctl sync` and the playbook `sync` task kind.
//
// Per host it costs a handful of round trips besides the file contents: one
// command lists the remote tree (find: type, mode, size, link target), one
// hashes the remote files whose size matches (sha256sum), one script creates
// directories and removes what is in the way, then the SFTP uploads, then one
// script sets modes and makes symlinks.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "common/expected.h"
#include "remote/transport.h"

namespace xft::playbooks {

enum class EntryKind { file, directory, symlink };

struct LocalEntry {
  std::string path;  // relative to the root, '/'-separated; parents come before children
  EntryKind kind = EntryKind::file;
  mode_t mode = 0;   // permission bits (07777)
  uint64_t size = 0;
  std::string link_target;  // symlinks only, as readlink gives it
};

// The local side of a sync, listed once and shared (read-only) by every
// host's thread. File hashes are computed the first time a host needs one
// (a host whose copy has a different size never does), once per file.
class SyncPlan {
 public:
  // Lists `root` (a directory); symlinks are kept as links, never followed.
  // Sockets, FIFOs and devices are an error naming the path.
  static Expected<SyncPlan> scan(const std::string& root);
  // For tests and callers that list by other means; `root` is where file
  // contents are read from.
  SyncPlan(std::string root, std::vector<LocalEntry> entries, mode_t root_mode = 0755);

  const std::string& root() const { return root_; }
  mode_t root_mode() const { return root_mode_; }  // given to the destination when it is created
  const std::vector<LocalEntry>& entries() const { return entries_; }
  size_t file_count() const;
  uint64_t file_bytes() const;
  std::string local_path(const LocalEntry& entry) const { return root_ + "/" + entry.path; }
  // SHA-256 (hex) of entries()[index]; thread-safe, computed once.
  Expected<std::string> sha256(size_t index) const;

 private:
  struct HashSlot {
    std::once_flag once;
    std::string hex;
    std::string error;
  };

  std::string root_;
  std::vector<LocalEntry> entries_;
  mode_t root_mode_ = 0755;
  mutable std::deque<HashSlot> hashes_;  // deque: once_flag cannot move
};

// One event from a host's sync, as deltas so a caller can add up hosts.
struct SyncProgress {
  size_t planned_files = 0;    // sent once, when the host's plan is known
  uint64_t planned_bytes = 0;
  size_t sent_files = 0;
  uint64_t sent_bytes = 0;
};

struct SyncOptions {
  bool check_only = false;    // plan and report, write nothing
  bool delete_extra = false;  // remove remote entries that the local tree does not have
  // Called from the host's thread (callers lock); may be empty.
  std::function<void(const SyncProgress&)> progress;
};

enum class ChangeKind { send, mkdir, chmod, link, remove };

struct SyncChange {
  ChangeKind kind = ChangeKind::send;
  std::string path;  // relative to the destination
  mode_t mode = 0;   // send, mkdir, chmod
  uint64_t bytes = 0;  // send
  std::string link_target;  // link
};

struct SyncReport {
  size_t files_sent = 0;       // in check mode: would be sent
  uint64_t bytes_sent = 0;
  size_t files_unchanged = 0;  // same size and hash (a mode fix alone does not resend)
  size_t dirs_created = 0;
  size_t modes_set = 0;
  size_t links_made = 0;
  size_t removed = 0;
  std::vector<SyncChange> changes;  // in the order they are made

  bool changed() const { return !changes.empty(); }
};

// "send", "mkdir", ...: for --check listings.
const char* change_name(ChangeKind kind);
// "send f (12 bytes, 0644)", "link l -> t", ...
std::string describe_change(const SyncChange& change);

// Makes `dest` (absolute) on the session's host hold the plan's tree. An
// error names the host and, where one is involved, the file; its kind is the
// transport's (a lost connection stays distinguishable from a refused write).
remote::Remote<SyncReport> sync_tree(remote::RemoteSession& session, const SyncPlan& plan,
                                       const std::string& dest, const SyncOptions& options = {});

// What a remote tree holds, as listed by remote_listing_command(): exposed
// for tests.
struct RemoteEntry {
  EntryKind kind = EntryKind::file;
  bool other = false;  // a socket, FIFO or device: always replaced
  mode_t mode = 0;
  uint64_t size = 0;
  std::string link_target;
};

// The shell command that lists `dest` (NUL-separated records; nothing when
// `dest` does not exist; exit 3 when it is not a directory).
std::string remote_listing_command(const std::string& dest);

// 'text' quoted for a POSIX shell.
std::string shell_quote(const std::string& text);

}  // namespace xft::playbooks
