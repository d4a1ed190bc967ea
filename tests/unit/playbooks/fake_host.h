// A host that exists only in memory, for playbook runner tests: files in a
// map, commands answered by a handler the test sets (default: exit 0), and a
// log of every command and write, so tests see exactly what would go over
// the wire. State survives reconnects, so a second run sees the first's work.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "launcher/transport.h"

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
  std::function<launcher::CommandResult(FakeHost&, const std::string&)> handler;
};

class FakeSession : public launcher::RemoteSession {
 public:
  explicit FakeSession(FakeHost& host) : host_(host) {}
  const inventory::Host& host() const override { return host_.host; }
  std::string host_key() const override { return host_.host_key; }

  launcher::Remote<launcher::CommandResult> run(const std::string& command,
                                                const launcher::RunOptions& = {}) override {
    host_.commands.push_back(command);
    if (host_.handler) return host_.handler(host_, command);
    return launcher::CommandResult{};
  }
  launcher::Remote<void> upload(const std::string& content, const std::string& path, mode_t mode) override {
    host_.writes.push_back(path);
    host_.files[path] = FakeFile{content, mode, false};
    return {};
  }
  launcher::Remote<void> upload_file(const std::string&, const std::string& path) override {
    return launcher::RemoteError{launcher::Failure::other, "upload_file not faked: " + path};
  }
  launcher::Remote<std::string> download(const std::string& path) override {
    auto found = host_.files.find(path);
    if (found == host_.files.end()) return launcher::RemoteError{launcher::Failure::other, "no such file " + path};
    return found->second.content;
  }
  launcher::Remote<launcher::RemoteFileInfo> stat(const std::string& path) override {
    launcher::RemoteFileInfo info;
    auto found = host_.files.find(path);
    if (found == host_.files.end()) return info;
    info.exists = true;
    info.is_directory = found->second.directory;
    info.mode = found->second.mode;
    info.size = found->second.content.size();
    return info;
  }
  launcher::Remote<void> mkdir(const std::string& path, mode_t mode) override {
    host_.writes.push_back(path + "/");
    host_.files[path] = FakeFile{"", mode, true};
    return {};
  }

 private:
  FakeHost& host_;
};

class FakeTransport : public launcher::Transport {
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
  launcher::Remote<std::unique_ptr<launcher::RemoteSession>> connect(const inventory::Host& wanted) override {
    FakeHost& host = (*this)[wanted.name];
    if (!host.reachable)
      return launcher::RemoteError{launcher::Failure::unreachable, wanted.name + " (" + wanted.address +
                                                                       "): connection refused"};
    return std::unique_ptr<launcher::RemoteSession>(std::make_unique<FakeSession>(host));
  }

 private:
  std::vector<std::unique_ptr<FakeHost>> hosts_;
};

}  // namespace xft::playbooks::testing
