// Where mpirun runs. Rank traffic must stay inside the cluster network: when
// the hosts are reached through a bastion, the control node is outside that
// network, so mpirun runs on the first inventory host (reached through the
// bastion) and its own ssh to the other hosts never crosses the bastion.
#pragma once

#include <string>
#include <vector>

#include "inventory/inventory.h"
#include "launcher/mpirun.h"

namespace xft::launcher {

// The mktemp -d template of the private directory that holds mpirun's ssh
// agent script on the first host.
inline constexpr const char* kRemoteAgentDirTemplate = "/tmp/xftctl-launch.XXXXXXXX";

struct LaunchSite {
  bool on_first_host = false;  // false: mpirun runs here, on the control node
  std::string host;            // the first host's inventory name (on_first_host)
  std::string address;
  std::string user;
  int port = 22;
  std::vector<inventory::JumpHost> jump;  // how the control node reaches it, outermost first
  std::string reason;                     // one line: why mpirun runs there
};

// On the first host when any host is behind a bastion (inventory jump:),
// else here.
LaunchSite launch_site_for(const std::vector<inventory::Host>& hosts);

// The spec as mpirun on the first host runs it: that host's mpirun on PATH,
// --allow-run-as-root only for a root login, its login user's own keys and
// known_hosts (setup hosts sets up passwordless SSH between the hosts), and
// Open MPI's out-of-band channel on the interface it picks (the control
// node's subnets mean nothing there). The rank command is unchanged: its
// xftctl path must exist on the first host (a shared path, or setup hosts).
MpirunSpec mpirun_spec_on_first_host(MpirunSpec spec, const LaunchSite& site);

// The ssh command (argv) that forwards local `port` to `port` on the first
// host's `listen_address`, through its bastions:
// {"ssh", "-J", "bastion", "-L", "8000:127.0.0.1:8000", "xftuser@10.0.0.11"}.
std::vector<std::string> ssh_forward_command(const LaunchSite& site, const std::string& listen_address, int port);

}  // namespace xft::launcher
