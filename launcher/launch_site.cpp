#include "launcher/launch_site.h"

namespace xft::launcher {

LaunchSite launch_site_for(const std::vector<inventory::Host>& hosts) {
  LaunchSite site;
  const inventory::Host* behind = nullptr;
  for (const auto& h : hosts)
    if (!h.jump.empty()) {
      behind = &h;
      break;
    }
  if (!behind) {
    site.reason = "no host is behind a bastion: mpirun runs on this machine";
    return site;
  }
  const inventory::Host& first = hosts.front();
  site.on_first_host = true;
  site.host = first.name;
  site.address = first.address;
  site.user = first.user;
  site.port = first.port;
  site.jump = first.jump;
  site.reason = behind->name + " is reached through bastion " + behind->jump.front().text() +
                ": mpirun runs on " + first.name + " so rank traffic never crosses the bastion";
  return site;
}

MpirunSpec mpirun_spec_on_first_host(MpirunSpec spec, const LaunchSite& site) {
  spec.mpirun = "mpirun";
  spec.as_root = site.user == "root";
  spec.ssh.key.clear();
  spec.ssh.known_hosts.clear();
  spec.oob_subnet.clear();
  return spec;
}

namespace {

// ProxyJump's comma list; a hop without a user logs in as the host's login
// user (the inventory's rule), which ssh would not assume on its own.
std::string jump_list(const std::vector<inventory::JumpHost>& jump, const std::string& login_user) {
  std::string list;
  for (auto hop : jump) {
    if (hop.user.empty()) hop.user = login_user;
    list += (list.empty() ? "" : ",") + hop.text();
  }
  return list;
}

}  // namespace

std::vector<std::string> ssh_forward_command(const LaunchSite& site, const std::string& listen_address, int port) {
  std::vector<std::string> argv{"ssh"};
  if (!site.jump.empty()) argv.insert(argv.end(), {"-J", jump_list(site.jump, site.user)});
  if (site.port != 22) argv.insert(argv.end(), {"-p", std::to_string(site.port)});
  std::string target = listen_address.find(':') == std::string::npos ? listen_address : "[" + listen_address + "]";
  argv.insert(argv.end(), {"-N", "-L", std::to_string(port) + ":" + target + ":" + std::to_string(port),
                           site.user + "@" + site.address});
  return argv;
}

}  // namespace xft::launcher
