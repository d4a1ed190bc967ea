#include "cli/reach_options.h"

#include <cstdio>
#include <mutex>

#include "cli/command.h"
#include "inventory/load.h"
#include "remote/credentials.h"
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
  // --hosts is the original name; -l/--limit the one Ansible users type.
  if (absent("--hosts") && absent("--limit"))
    command.add_option(absent("-l") ? "-l,--limit,--hosts" : "--limit,--hosts", flags.hosts,
                       "hosts to work on, an Ansible pattern: all,compute,!node01; @group, &group, h[01-04], h0*");
}

std::unique_ptr<remote::Transport> make_ssh_transport(const ReachFlags& flags) {
  remote::SshOptions options;
  options.known_hosts_path = flags.known_hosts;
  options.accept_new_host_keys = flags.accept_new_host_keys;
  options.connect_timeout_s = flags.connect_timeout_s;
  options.command_timeout_s = flags.timeout_s;
  // The logger serializes the fan-out threads' notices.
  auto notice = [](const std::string& line) { log::info(line); };
  return std::make_unique<remote::SshTransport>(
      options, std::make_shared<remote::DefaultPasswordSource>(), notice);
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
