#include "cli/reach_options.h"

#include <cstdio>
#include <mutex>

#include "cli/command.h"
#include "inventory/load.h"
#include "playbooks/report_text.h"
#include "remote/credentials.h"
#include "remote/ssh_config.h"
#include "remote/ssh_transport.h"
#include "common/log.h"

namespace xft::cli {

// A command that already defines one of these names (say its own --timeout
// for something else) keeps its own; the reach flag is left out there.
void add_reach_flags(CLI::App& command, ReachFlags& flags) {
  auto absent = [&](const char* name) { return command.get_option_no_throw(name) == nullptr; };
  if (absent("--accept-new-host-keys"))
    command.add_flag("--accept-new-host-keys", flags.accept_new_host_keys,
                     "trust and record host keys not yet in known_hosts (a changed key is always refused)");
  if (absent("--known-hosts"))
    command.add_option("--known-hosts", flags.known_hosts,
                       "known_hosts file (else $XFTCTL_KNOWN_HOSTS, else ~/.config/xftctl/known_hosts)");
  if (absent("--fanout"))
    command.add_option(absent("-f") ? "-f,--fanout" : "--fanout", flags.fanout, "hosts worked on at once")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
  if (absent("--connect-timeout"))
    command.add_option("--connect-timeout", flags.connect_timeout_s, "seconds to wait for a host to answer")
        ->capture_default_str()
        ->check(CLI::Range(1, 3600));
  if (absent("--timeout"))
    command.add_option("--timeout", flags.timeout_s, "seconds a remote command may run (0: no limit)")
        ->capture_default_str()
        ->check(CLI::Range(0, 86400 * 7));
  if (absent("--ssh-config"))
    command.add_option("--ssh-config", flags.ssh_config,
                       "OpenSSH client config whose Host blocks fill in what the inventory leaves unset "
                       "(HostName, User, Port, ProxyJump), or none (default: ~/.ssh/config when it exists)");
  // --hosts is the original name; -l/--limit the one Ansible users type.
  if (absent("--hosts") && absent("--limit"))
    command.add_option(absent("-l") ? "-l,--limit,--hosts" : "--limit,--hosts", flags.hosts,
                       "hosts to work on, an Ansible pattern: all,compute,!node01; @group, &group, h[01-04], h0*");
}

namespace {

// Host keys trusted on first use are told once the command is done with its
// hosts, folded (one line for 64 hosts); each key with its fingerprint goes
// to -v right away, and to --log-format json as a record of its own.
class TrustedKeyNotices {
 public:
  void record(const remote::TrustedHostKey& key) {
    log::Fields fields{{"host", key.host}, {"key_type", key.key_type}, {"fingerprint", key.fingerprint},
                       {"known_hosts", key.known_hosts}};
    if (log::current_format() == log::Format::json) return log::info(key.message(), fields);
    log::debug(key.message(), fields);
    std::lock_guard lock(mutex_);
    keys_.push_back(key);
    keys_.back().known_hosts = playbooks::path_from_home(key.known_hosts, remote::home_directory());
  }

  void flush() {
    std::lock_guard lock(mutex_);
    for (const auto& line : playbooks::trusted_keys_notice(keys_, playbooks::kReportWidth - kLogPrefix.size()))
      log::info(line);
    keys_.clear();
  }

 private:
  static constexpr std::string_view kLogPrefix = "xftctl: ";
  std::mutex mutex_;
  std::vector<remote::TrustedHostKey> keys_;
};

// The SSH transport, telling the keys it trusted when the command lets it go.
class NoticingTransport : public remote::Transport {
 public:
  NoticingTransport(remote::SshOptions options, std::shared_ptr<TrustedKeyNotices> notices)
      : notices_(notices),
        ssh_(std::move(options), std::make_shared<remote::DefaultPasswordSource>(),
             [notices](const remote::TrustedHostKey& key) { notices->record(key); }) {}
  ~NoticingTransport() override { notices_->flush(); }

  remote::Remote<std::unique_ptr<remote::RemoteSession>> connect(const inventory::Host& host) override {
    return ssh_.connect(host);
  }

 private:
  std::shared_ptr<TrustedKeyNotices> notices_;
  remote::SshTransport ssh_;
};

}  // namespace

std::string ssh_config_path(const ReachFlags& flags) {
  return flags.ssh_config == "none"  ? std::string()
         : flags.ssh_config.empty() ? remote::default_ssh_config_path()
                                    : flags.ssh_config;
}

Expected<std::vector<inventory::Host>> hosts_as_reached(std::vector<inventory::Host> hosts, const ReachFlags& flags) {
  const std::string config = ssh_config_path(flags);
  for (auto& host : hosts) {
    auto reached = remote::apply_ssh_config(host, config);
    if (!reached) return reached.error();
    host = std::move(*reached);
  }
  return hosts;
}

std::unique_ptr<remote::Transport> make_ssh_transport(const ReachFlags& flags) {
  remote::SshOptions options;
  options.known_hosts_path = flags.known_hosts;
  options.accept_new_host_keys = flags.accept_new_host_keys;
  options.connect_timeout_s = flags.connect_timeout_s;
  options.command_timeout_s = flags.timeout_s;
  options.ssh_config = ssh_config_path(flags);
  return std::make_unique<NoticingTransport>(options, std::make_shared<TrustedKeyNotices>());
}

Expected<std::vector<inventory::Host>> load_selected_hosts(const std::string& inventory_flag,
                                                           const std::string& pattern) {
  auto path = inventory::locate_inventory(inventory_flag);
  if (!path) return path.error();
  auto loaded = inventory::load_inventory(*path);
  if (!loaded) return loaded.error();
  auto hosts = inventory::select_hosts(*loaded, pattern);
  if (!hosts) return make_error("--hosts: " + hosts.error().message);
  if (hosts->empty()) return make_error(*path + ": the inventory lists no hosts");
  return hosts;
}

int reach_exit_code(bool any_unreachable, bool any_failed) {
  if (any_unreachable) return exit_unreachable;
  return any_failed ? exit_host_failed : exit_ok;
}

}  // namespace xft::cli
