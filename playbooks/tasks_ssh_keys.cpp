// authorized_key and known_hosts: OpenSSH's key files, edited line by line so
// that every line the task does not own stays as it was.
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "playbooks/sync.h"
#include "playbooks/task_args.h"
#include "playbooks/user_session.h"

namespace xft::playbooks {

using namespace detail;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

bool is_key_type(const std::string& word) {
  return word.rfind("ssh-", 0) == 0 || word.rfind("ecdsa-", 0) == 0 || word.rfind("sk-", 0) == 0;
}

// The base64 blob of an authorized_keys line (options may come first), "" for none.
std::string key_blob(const std::string& line) {
  auto words = words_of(line);
  if (words.empty() || words[0][0] == '#') return "";
  for (size_t i = 0; i + 1 < words.size(); ++i)
    if (is_key_type(words[i])) return words[i + 1];
  return "";
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

struct KnownHostsLine {
  std::vector<std::string> names;  // empty for comments, hashed and @marker lines
  std::string type, key, rest;
};

KnownHostsLine parse_known_hosts_line(const std::string& line) {
  KnownHostsLine parsed;
  auto words = words_of(line);
  if (words.size() < 3 || words[0][0] == '#' || words[0][0] == '|' || words[0][0] == '@') return parsed;
  std::stringstream names(words[0]);
  for (std::string name; std::getline(names, name, ',');) parsed.names.push_back(name);
  parsed.type = words[1];
  parsed.key = words[2];
  for (size_t i = 3; i < words.size(); ++i) parsed.rest += " " + words[i];
  return parsed;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ",") + name;
  return text;
}

// Where a user's ~/.ssh is: /root for root, else the passwd entry.
remote::Remote<std::string> ssh_dir(const std::string& user, TaskEnv& env) {
  if (user == "root") return std::string("/root/.ssh");
  auto ran = env.session.run("getent passwd -- " + shell_quote(user) + " | cut -d: -f6");
  if (!ran) return ran.error();
  std::string home = ran->out.substr(0, ran->out.find('\n'));
  if (ran->exit_status != 0 || home.empty())
    return remote::RemoteError{remote::Failure::other, "user " + user + " does not exist on the host"};
  return home + "/.ssh";
}

// ~/.ssh exists with mode 0700 (sshd's StrictModes refuses looser ones),
// made by the session's user, who owns it then.
std::optional<TaskResult> ensure_ssh_dir(const std::string& dir, remote::RemoteSession& session, bool check,
                                         bool& changed) {
  auto info = session.stat(dir);
  if (!info) return from_error(info.error());
  if (info->exists && !info->is_directory) return failed(dir + " exists and is not a directory (remove it first)");
  if (info->exists && info->mode == 0700) return std::nullopt;
  changed = true;
  if (check) return std::nullopt;
  auto ran = session.run("mkdir -p -- " + shell_quote(dir) + " && chmod 0700 -- " + shell_quote(dir));
  if (!ran) return from_error(ran.error());
  if (ran->exit_status != 0) return failed(dir + ": " + ran->err.substr(0, ran->err.find('\n')));
  return std::nullopt;
}

TaskResult ensure_key_file(const nlohmann::json& args, TaskEnv& env, const char* file_name, mode_t mode,
                           const std::function<std::string(const std::string&)>& merge) {
  auto user = arg(args, "user", "root");
  auto dir = ssh_dir(user, env);
  if (!dir) return from_error(dir.error());
  // Another user's files are edited with that user's rights, never root's
  // (user_session.h); the login user's and root's own with the session's.
  std::optional<UserSession> as_user;
  bool foreign = user != "root" && user != env.session.host().user;
  remote::RemoteSession& session = foreign ? as_user.emplace(env.session, user) : env.session;
  auto path = arg(args, "path", *dir + "/" + file_name);
  bool dir_changed = false;
  if (auto problem = ensure_ssh_dir(*dir, session, env.check, dir_changed)) return *problem;
  auto current = read_remote_file(session, path);
  if (!current) return from_error(current.error());
  auto wanted = merge(current->content);
  auto change = ensure_remote_file(session, path, wanted, mode, env.check, mode);
  if (!change) return from_error(change.error());
  if (!change->changed && !dir_changed) return outcome(false, path);
  std::string what = change->changed ? change->what : "";
  if (dir_changed) what = *dir + " 0700" + (what.empty() ? "" : ", " + what);
  return outcome(true, path + ": " + (env.check ? "would change " : "") + what, change->diff);
}

}  // namespace

std::string merge_authorized_keys(const std::string& current, const std::string& wanted, bool exclusive) {
  std::vector<std::string> wanted_lines;
  std::set<std::string> wanted_blobs;
  for (const auto& line : lines_of(wanted)) {
    auto blob = key_blob(line);
    if (blob.empty() || !wanted_blobs.insert(blob).second) continue;
    wanted_lines.push_back(line);
  }
  std::vector<std::string> out;
  std::set<std::string> present;
  for (const auto& line : lines_of(current)) {
    auto blob = key_blob(line);
    if (!blob.empty() && exclusive && !wanted_blobs.count(blob)) continue;
    if (!blob.empty()) present.insert(blob);
    out.push_back(line);
  }
  for (const auto& line : wanted_lines)
    if (!present.count(key_blob(line))) out.push_back(line);
  return join_lines(out);
}

std::string merge_known_hosts(const std::string& current, const std::string& wanted) {
  auto out = lines_of(current);
  for (const auto& wanted_line : lines_of(wanted)) {
    auto entry = parse_known_hosts_line(wanted_line);
    if (entry.names.empty()) continue;
    std::set<std::string> names(entry.names.begin(), entry.names.end());
    // Already there exactly (same names, type and key): nothing to do.
    bool present = false;
    for (const auto& line : out) {
      auto have = parse_known_hosts_line(line);
      if (have.type == entry.type && have.key == entry.key &&
          std::set<std::string>(have.names.begin(), have.names.end()) == names)
        present = true;
    }
    if (present) continue;
    // Any other entry of this key type for these names is stale: drop the names from it.
    std::vector<std::string> kept;
    for (const auto& line : out) {
      auto have = parse_known_hosts_line(line);
      if (have.names.empty() || have.type != entry.type) {
        kept.push_back(line);
        continue;
      }
      std::vector<std::string> other_names;
      for (const auto& name : have.names)
        if (!names.count(name)) other_names.push_back(name);
      if (other_names.size() == have.names.size()) kept.push_back(line);
      else if (!other_names.empty()) kept.push_back(join_names(other_names) + " " + have.type + " " + have.key + have.rest);
    }
    kept.push_back(join_names(entry.names) + " " + entry.type + " " + entry.key);
    out = std::move(kept);
  }
  return join_lines(out);
}

TaskResult run_authorized_key(const nlohmann::json& args, TaskEnv& env) {
  auto keys = arg(args, "key");
  bool exclusive = arg_bool(args, "exclusive");
  for (const auto& line : lines_of(keys))
    if (!words_of(line).empty() && key_blob(line).empty())
      return failed("key: '" + line.substr(0, 40) + "' is not a public key line (type base64 [comment])");
  return ensure_key_file(args, env, "authorized_keys", 0600,
                         [&](const std::string& current) { return merge_authorized_keys(current, keys, exclusive); });
}

TaskResult run_known_hosts(const nlohmann::json& args, TaskEnv& env) {
  auto lines = arg(args, "lines");
  for (const auto& line : lines_of(lines))
    if (!words_of(line).empty() && parse_known_hosts_line(line).names.empty())
      return failed("lines: '" + line.substr(0, 40) + "' is not a known_hosts line (names type key)");
  return ensure_key_file(args, env, "known_hosts", 0644,
                         [&](const std::string& current) { return merge_known_hosts(current, lines); });
}

}  // namespace xft::playbooks
