#include "playbooks/sync.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "common/sha256.h"

namespace xft::playbooks {
namespace fs = std::filesystem;
using remote::Failure;
using remote::Remote;
using remote::RemoteError;

// --- the local tree ----------------------------------------------------------

namespace {

Expected<std::string> read_link(const std::string& path) {
  std::string target(4096, '\0');
  ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
  if (n < 0) return make_error("cannot read the symlink " + path + ": " + std::strerror(errno));
  target.resize(static_cast<size_t>(n));
  return target;
}

Expected<LocalEntry> describe_local(const std::string& root, const std::string& relative) {
  std::string path = root + "/" + relative;
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0) return make_error("cannot stat " + path + ": " + std::strerror(errno));
  LocalEntry entry;
  entry.path = relative;
  entry.mode = info.st_mode & 07777;
  if (S_ISREG(info.st_mode)) {
    entry.kind = EntryKind::file;
    entry.size = static_cast<uint64_t>(info.st_size);
  } else if (S_ISDIR(info.st_mode)) {
    entry.kind = EntryKind::directory;
  } else if (S_ISLNK(info.st_mode)) {
    entry.kind = EntryKind::symlink;
    auto target = read_link(path);
    if (!target) return target.error();
    entry.link_target = *target;
  } else {
    return make_error(path + ": cannot sync a socket, FIFO or device file; remove it from the directory or sync "
                             "a directory without it");
  }
  return entry;
}

}  // namespace

Expected<SyncPlan> SyncPlan::scan(const std::string& root_argument) {
  std::string root = root_argument;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  struct stat info;
  if (::stat(root.c_str(), &info) != 0) return make_error("cannot read " + root + ": " + std::strerror(errno));
  if (!S_ISDIR(info.st_mode)) return make_error(root + " is not a directory; sync pushes a directory");

  std::vector<LocalEntry> entries;
  std::error_code error;
  fs::recursive_directory_iterator walk(root, fs::directory_options::none, error);
  for (; !error && walk != fs::recursive_directory_iterator(); walk.increment(error)) {
    auto entry = describe_local(root, walk->path().lexically_relative(root).generic_string());
    if (!entry) return entry.error();
    entries.push_back(std::move(*entry));
  }
  if (error) return make_error("cannot list " + root + ": " + error.message());
  // Byte order puts every directory before what it holds ("a" < "a/b").
  std::sort(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.path < b.path; });
  return SyncPlan(root, std::move(entries), info.st_mode & 07777);
}

SyncPlan::SyncPlan(std::string root, std::vector<LocalEntry> entries, mode_t root_mode)
    : root_(std::move(root)), entries_(std::move(entries)), root_mode_(root_mode), hashes_(entries_.size()) {}

size_t SyncPlan::file_count() const {
  return static_cast<size_t>(
      std::count_if(entries_.begin(), entries_.end(), [](auto& e) { return e.kind == EntryKind::file; }));
}

uint64_t SyncPlan::file_bytes() const {
  uint64_t total = 0;
  for (const auto& entry : entries_)
    if (entry.kind == EntryKind::file) total += entry.size;
  return total;
}

Expected<std::string> SyncPlan::sha256(size_t index) const {
  HashSlot& slot = hashes_.at(index);
  std::call_once(slot.once, [&] {
    auto hex = sha256_file(local_path(entries_[index]));
    if (hex) slot.hex = *hex;
    else slot.error = hex.error().message;
  });
  if (!slot.error.empty()) return make_error(slot.error);
  return slot.hex;
}

// --- naming ------------------------------------------------------------------

const char* change_name(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::send: return "send";
    case ChangeKind::mkdir: return "mkdir";
    case ChangeKind::chmod: return "chmod";
    case ChangeKind::link: return "link";
    case ChangeKind::remove: return "remove";
  }
  return "?";
}

namespace {

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

std::string describe_change(const SyncChange& change) {
  std::string line = std::string(change_name(change.kind)) + " " + change.path;
  switch (change.kind) {
    case ChangeKind::send:
      return line + " (" + std::to_string(change.bytes) + " bytes, " + octal(change.mode) + ")";
    case ChangeKind::mkdir:
    case ChangeKind::chmod: return line + " " + octal(change.mode);
    case ChangeKind::link: return line + " -> " + change.link_target;
    case ChangeKind::remove: return line;
  }
  return line;
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// --- the remote tree ---------------------------------------------------------

std::string remote_listing_command(const std::string& dest) {
  std::string d = shell_quote(dest);
  // %y type, %m mode (octal), %s size, %P path below dest, then %l the link target.
  return "if [ -e " + d + " ] || [ -L " + d + " ]; then [ -d " + d + " ] || { echo " + d +
         "' exists and is not a directory' >&2; exit 3; }; cd " + d +
         " && find . -mindepth 1 -printf '%y %m %s %P\\0%l\\0'; fi";
}

namespace {

using RemoteTree = std::map<std::string, RemoteEntry>;

SyncChange change(ChangeKind kind, const std::string& path, mode_t mode = 0, uint64_t bytes = 0,
                  const std::string& link_target = "") {
  SyncChange made;
  made.kind = kind;
  made.path = path;
  made.mode = mode;
  made.bytes = bytes;
  made.link_target = link_target;
  return made;
}

// Records are "TYPE MODE SIZE PATH\0LINK\0"; PATH may hold spaces.
Expected<RemoteTree> parse_listing(const std::string& text) {
  RemoteTree tree;
  size_t at = 0;
  while (at < text.size()) {
    size_t record_end = text.find('\0', at);
    size_t link_end = record_end == std::string::npos ? record_end : text.find('\0', record_end + 1);
    if (link_end == std::string::npos) return make_error("truncated listing from find");
    std::string record = text.substr(at, record_end - at);
    std::string link = text.substr(record_end + 1, link_end - record_end - 1);
    at = link_end + 1;

    size_t first = record.find(' '), second = record.find(' ', first + 1),
           third = second == std::string::npos ? second : record.find(' ', second + 1);
    if (first != 1 || third == std::string::npos) return make_error("unexpected listing line: " + record);
    RemoteEntry entry;
    char type = record[0];
    entry.kind = type == 'd' ? EntryKind::directory : type == 'l' ? EntryKind::symlink : EntryKind::file;
    entry.other = type != 'd' && type != 'l' && type != 'f';
    entry.mode = static_cast<mode_t>(std::strtoul(record.c_str() + first + 1, nullptr, 8)) & 07777;
    entry.size = std::strtoull(record.c_str() + second + 1, nullptr, 10);
    entry.link_target = link;
    tree[record.substr(third + 1)] = std::move(entry);
  }
  return tree;
}

// sha256sum's "HEX  NAME" lines. A name holding a newline or a backslash
// comes escaped: the line starts with a backslash and the name holds \n and
// \\. Not -z: the coreutils of RHEL 8 and Ubuntu 20.04 lack it.
std::map<std::string, std::string> parse_hashes(const std::string& text) {
  std::map<std::string, std::string> hashes;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    bool escaped = !line.empty() && line[0] == '\\';
    if (escaped) line.erase(0, 1);
    if (line.size() < 67 || line[64] != ' ') continue;
    std::string name = line.substr(66), unescaped;
    for (size_t i = 0; i < name.size(); ++i) {
      if (!escaped || name[i] != '\\' || i + 1 == name.size()) {
        unescaped += name[i];
        continue;
      }
      char next = name[++i];
      unescaped += next == 'n' ? '\n' : next == 'r' ? '\r' : next;
    }
    hashes[unescaped] = line.substr(0, 64);
  }
  return hashes;
}

// --- one host ----------------------------------------------------------------

class HostSync {
 public:
  HostSync(remote::RemoteSession& session, const SyncPlan& plan, std::string dest, const SyncOptions& options)
      : session_(session), plan_(plan), dest_(std::move(dest)), options_(options) {
    while (dest_.size() > 1 && dest_.back() == '/') dest_.pop_back();
  }

  Remote<SyncReport> run() {
    if (dest_.empty() || dest_[0] != '/')
      return error(Failure::other, "destination " + dest_ + " must be an absolute path");
    auto listed = list_remote();
    if (!listed) return listed.error();
    if (auto planned = plan_changes(); !planned) return planned.error();
    report_planned();
    if (options_.check_only) return std::move(report_);
    if (auto prepared = run_script(prepare_script(), "create directories"); !prepared) return prepared.error();
    if (auto sent = send_files(); !sent) return sent.error();
    if (auto finished = run_script(finish_script(), "set modes and links"); !finished) return finished.error();
    return std::move(report_);
  }

 private:
  RemoteError error(Failure kind, const std::string& what) const {
    return RemoteError{kind, session_.host().name + ": sync to " + dest_ + ": " + what};
  }

  // A transport error already names the host; make sure it names the file.
  RemoteError with_file(RemoteError failure, const std::string& path) const {
    if (failure.message.find(path) == std::string::npos) failure.message += " (" + path + ")";
    if (failure.message.find(session_.host().name) == std::string::npos)
      failure.message = session_.host().name + ": " + failure.message;
    return failure;
  }

  static std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

  Remote<void> list_remote() {
    auto listed = session_.run(remote_listing_command(dest_));
    if (!listed) return listed.error();
    if (listed->exit_status != 0)
      return error(Failure::other, "cannot list the destination: " +
                                       (listed->err.empty() ? "find exited with " + std::to_string(listed->exit_status)
                                                            : first_line(listed->err)));
    auto tree = parse_listing(listed->out);
    if (!tree) return error(Failure::other, tree.error().message);
    remote_ = std::move(*tree);
    return {};
  }

  void add(SyncChange change) {
    switch (change.kind) {
      case ChangeKind::send:
        ++report_.files_sent;
        report_.bytes_sent += change.bytes;
        break;
      case ChangeKind::mkdir: ++report_.dirs_created; break;
      case ChangeKind::chmod: ++report_.modes_set; break;
      case ChangeKind::link: ++report_.links_made; break;
      case ChangeKind::remove: ++report_.removed; break;
    }
    report_.changes.push_back(std::move(change));
  }

  void remove_in_the_way(const std::string& path) {
    removed_.insert(path);
    removes_.push_back(change(ChangeKind::remove, path));
  }

  Remote<void> plan_changes() {
    std::vector<size_t> same_size;
    for (size_t i = 0; i < plan_.entries().size(); ++i) {
      const LocalEntry& local = plan_.entries()[i];
      auto found = remote_.find(local.path);
      const RemoteEntry* remote = found == remote_.end() || under_removed(local.path) ? nullptr : &found->second;
      if (remote && (remote->other || remote->kind != local.kind)) {
        remove_in_the_way(local.path);
        remote = nullptr;
      }
      switch (local.kind) {
        case EntryKind::directory:
          if (!remote) {
            mkdirs_.push_back(change(ChangeKind::mkdir, local.path, local.mode));
          } else if (remote->mode != local.mode) {
            chmods_.push_back(change(ChangeKind::chmod, local.path, local.mode));
          }
          break;
        case EntryKind::symlink:
          // ln -sfn replaces a link that points elsewhere.
          if (!remote || remote->link_target != local.link_target) {
            links_.push_back(change(ChangeKind::link, local.path, 0, 0, local.link_target));
          }
          break;
        case EntryKind::file:
          if (remote && remote->size == local.size) same_size.push_back(i);
          else sends_.push_back(i);
          break;
      }
    }
    if (auto compared = compare_hashes(same_size); !compared) return compared;
    if (options_.delete_extra) plan_deletions();
    for (auto& made : removes_) add(made);
    for (auto& made : mkdirs_) add(made);
    for (size_t i : sends_) {
      const LocalEntry& local = plan_.entries()[i];
      add(change(ChangeKind::send, local.path, local.mode, local.size));
    }
    for (auto& made : links_) add(made);
    for (auto& made : chmods_) add(made);
    return {};
  }

  bool under_removed(const std::string& path) const {
    for (size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0; slash = path.rfind('/', slash - 1))
      if (removed_.count(path.substr(0, slash))) return true;
    return false;
  }

  // Files of equal size: the same hash means unchanged (a mode fix at most).
  Remote<void> compare_hashes(const std::vector<size_t>& same_size) {
    if (same_size.empty()) return {};
    std::string names;
    for (size_t i : same_size) names += plan_.entries()[i].path + '\0';
    remote::RunOptions run_options;
    run_options.stdin_data = names;
    auto hashed = session_.run("cd " + shell_quote(dest_) + " && xargs -0 sha256sum --", run_options);
    if (!hashed) return hashed.error();
    // An unreadable file makes sha256sum fail for that file only: it is resent.
    if (hashed->exit_status == 126 || hashed->exit_status == 127)
      return error(Failure::other, "cannot hash the remote files (are xargs and sha256sum installed?): " +
                                       first_line(hashed->err));
    auto remote_hashes = parse_hashes(hashed->out);
    for (size_t i : same_size) {
      const LocalEntry& local = plan_.entries()[i];
      auto local_hash = plan_.sha256(i);
      if (!local_hash) return error(Failure::other, local_hash.error().message);
      auto remote_hash = remote_hashes.find(local.path);
      if (remote_hash == remote_hashes.end() || remote_hash->second != *local_hash) {
        sends_.push_back(i);
        continue;
      }
      ++report_.files_unchanged;
      if (remote_.at(local.path).mode != local.mode)
        chmods_.push_back(change(ChangeKind::chmod, local.path, local.mode));
    }
    std::sort(sends_.begin(), sends_.end());
    return {};
  }

  void plan_deletions() {
    std::set<std::string> local_paths;
    for (const auto& entry : plan_.entries()) local_paths.insert(entry.path);
    for (const auto& [path, entry] : remote_)
      if (!local_paths.count(path) && !removed_.count(path) && !under_removed(path)) remove_in_the_way(path);
  }

  void report_planned() {
    if (!options_.progress) return;
    SyncProgress planned;
    planned.planned_files = report_.files_sent;
    planned.planned_bytes = report_.bytes_sent;
    options_.progress(planned);
  }

  std::string prepare_script() const {
    std::string d = shell_quote(dest_);
    std::string script = "set -e\n[ -d " + d + " ] || { mkdir -p " + d + " && chmod " + octal(plan_.root_mode()) +
                         " " + d + "; }\ncd " + d + "\n";
    for (const auto& change : removes_) script += "rm -rf -- " + shell_quote(change.path) + "\n";
    // Writable while we fill them; finish_script gives them their modes.
    for (const auto& change : mkdirs_) script += "mkdir -p -m 0700 -- " + shell_quote(change.path) + "\n";
    return script;
  }

  std::string finish_script() const {
    std::string script = "set -e\ncd " + shell_quote(dest_) + "\n";
    for (const auto& change : links_)
      script += "ln -sfn -- " + shell_quote(change.link_target) + " " + shell_quote(change.path) + "\n";
    for (const auto& change : chmods_) script += "chmod " + octal(change.mode) + " -- " + shell_quote(change.path) + "\n";
    // Deepest first: a read-only parent must not block its children.
    for (auto change = mkdirs_.rbegin(); change != mkdirs_.rend(); ++change)
      script += "chmod " + octal(change->mode) + " -- " + shell_quote(change->path) + "\n";
    return script;
  }

  Remote<void> run_script(const std::string& script, const std::string& what) {
    remote::RunOptions run_options;
    run_options.stdin_data = script;
    auto ran = session_.run("sh -s", run_options);
    if (!ran) return ran.error();
    if (ran->exit_status != 0)
      return error(Failure::other, "cannot " + what + ": " +
                                       (ran->err.empty() ? "exit status " + std::to_string(ran->exit_status)
                                                         : first_line(ran->err)));
    return {};
  }

  Remote<void> send_files() {
    for (size_t i : sends_) {
      const LocalEntry& local = plan_.entries()[i];
      std::string remote_path = dest_ + "/" + local.path;
      uint64_t reported = 0;
      auto on_bytes = [&](uint64_t sent) {
        if (!options_.progress || sent <= reported) return;
        SyncProgress step;
        step.sent_bytes = sent - reported;
        reported = sent;
        options_.progress(step);
      };
      auto sent = session_.upload_file_reporting(plan_.local_path(local), remote_path, on_bytes);
      if (!sent) return with_file(sent.error(), remote_path);
      if (options_.progress) {
        SyncProgress done;
        done.sent_files = 1;
        done.sent_bytes = local.size > reported ? local.size - reported : 0;
        options_.progress(done);
      }
    }
    return {};
  }

  remote::RemoteSession& session_;
  const SyncPlan& plan_;
  std::string dest_;
  const SyncOptions& options_;
  RemoteTree remote_;
  std::set<std::string> removed_;
  std::vector<SyncChange> removes_, mkdirs_, chmods_, links_;
  std::vector<size_t> sends_;  // indexes into plan_.entries()
  SyncReport report_;
};

}  // namespace

Remote<SyncReport> sync_tree(remote::RemoteSession& session, const SyncPlan& plan, const std::string& dest,
                             const SyncOptions& options) {
  return HostSync(session, plan, dest, options).run();
}

}  // namespace xft::playbooks
