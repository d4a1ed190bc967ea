// A host that exists only in memory, for playbook runner tests: files in a
// map, commands answered by a handler the test sets (default: exit 0), and a
// log of every command and write, so tests see exactly what would go over
// the wire. State survives reconnects, so a second run sees the first's work.
// shell_words and run_locally let a handler read a command the way a shell
// would, or hand it to a real /bin/sh.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "remote/transport.h"

namespace xft::playbooks::testing {

struct FakeFile {
  std::string content;
  mode_t mode = 0644;
  bool directory = false;
};

struct FakeHost {
  inventory::Host host;
  std::string host_key = "ssh-ed25519 AAAAC3NzaFAKEKEY";
  bool reachable = true;
  std::map<std::string, FakeFile> files;
  std::vector<std::string> commands;  // every command run, in order
  std::vector<std::string> writes;    // every path uploaded, in order
  std::string stdin_data;             // what the latest command was given on stdin
  std::function<remote::CommandResult(FakeHost&, const std::string&)> handler;
};

class FakeSession : public remote::RemoteSession {
 public:
  explicit FakeSession(FakeHost& host) : host_(host) {}
  const inventory::Host& host() const override { return host_.host; }
  std::string host_key() const override { return host_.host_key; }

  remote::Remote<remote::CommandResult> run(const std::string& command,
                                                const remote::RunOptions& options = {}) override {
    host_.commands.push_back(command);
    host_.stdin_data = options.stdin_data;
    if (host_.handler) return host_.handler(host_, command);
    return remote::CommandResult{};
  }
  remote::Remote<void> upload(const std::string& content, const std::string& path, mode_t mode) override {
    host_.writes.push_back(path);
    host_.files[path] = FakeFile{content, mode, false};
    return {};
  }
  remote::Remote<void> upload_file(const std::string&, const std::string& path) override {
    return remote::RemoteError{remote::Failure::other, "upload_file not faked: " + path};
  }
  remote::Remote<std::string> download(const std::string& path) override {
    auto found = host_.files.find(path);
    if (found == host_.files.end()) return remote::RemoteError{remote::Failure::other, "no such file " + path};
    return found->second.content;
  }
  remote::Remote<remote::RemoteFileInfo> stat(const std::string& path) override {
    remote::RemoteFileInfo info;
    auto found = host_.files.find(path);
    if (found == host_.files.end()) return info;
    info.exists = true;
    info.is_directory = found->second.directory;
    info.mode = found->second.mode;
    info.size = found->second.content.size();
    return info;
  }
  remote::Remote<void> mkdir(const std::string& path, mode_t mode) override {
    host_.writes.push_back(path + "/");
    host_.files[path] = FakeFile{"", mode, true};
    return {};
  }

 private:
  FakeHost& host_;
};

// The words a POSIX shell makes of `command` (quotes removed; operators such
// as && stay words when spaced), for handlers that match on argv.
inline std::vector<std::string> shell_words(const std::string& command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if (c == '\'') {
      size_t end = command.find('\'', i + 1);
      word += command.substr(i + 1, end - i - 1);
      i = end;
      in_word = true;
    } else if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
      in_word = true;
    } else if (c == ' ' || c == '\n' || c == '\t') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

// `command` run by a real /bin/sh -c here, with `stdin_data` as its input and
// `path_first` (when given) at the front of PATH.
inline remote::CommandResult run_locally(const std::string& command, const std::string& stdin_data = "",
                                          const std::string& path_first = "") {
  char dir_template[] = "/tmp/xft-fake-shell.XXXXXX";
  std::string dir = ::mkdtemp(dir_template);
  std::ofstream(dir + "/in", std::ios::binary) << stdin_data;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, (dir + "/in").c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, (dir + "/out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, (dir + "/err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::string path = "PATH=" + (path_first.empty() ? "" : path_first + ":") + "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  const char* envp[] = {path.c_str(), "LC_ALL=C", nullptr};
  pid_t pid = 0;
  remote::CommandResult result;
  if (posix_spawn(&pid, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv), const_cast<char* const*>(envp)) == 0) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
  } else {
    result.exit_status = 127;
  }
  posix_spawn_file_actions_destroy(&actions);
  auto slurp = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  };
  result.out = slurp(dir + "/out");
  result.err = slurp(dir + "/err");
  for (const char* name : {"/in", "/out", "/err"}) ::unlink((dir + name).c_str());
  ::rmdir(dir.c_str());
  return result;
}

class FakeTransport : public remote::Transport {
 public:
  FakeHost& add(const std::string& name, const std::string& address) {
    auto host = std::make_unique<FakeHost>();
    host->host.name = name;
    host->host.address = address;
    host->host_key = "ssh-ed25519 AAAAC3Nza" + name;
    hosts_.push_back(std::move(host));
    return *hosts_.back();
  }
  std::vector<inventory::Host> inventory_hosts() const {
    std::vector<inventory::Host> list;
    for (const auto& host : hosts_) list.push_back(host->host);
    return list;
  }
  FakeHost& operator[](const std::string& name) {
    for (auto& host : hosts_)
      if (host->host.name == name) return *host;
    throw std::runtime_error("no fake host " + name);
  }
  remote::Remote<std::unique_ptr<remote::RemoteSession>> connect(const inventory::Host& wanted) override {
    FakeHost& host = (*this)[wanted.name];
    if (!host.reachable)
      return remote::RemoteError{remote::Failure::unreachable, wanted.name + " (" + wanted.address +
                                                                       "): connection refused"};
    return std::unique_ptr<remote::RemoteSession>(std::make_unique<FakeSession>(host));
  }

 private:
  std::vector<std::unique_ptr<FakeHost>> hosts_;
};

}  // namespace xft::playbooks::testing
