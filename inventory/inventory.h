// The cluster inventory: which hosts exist, how to reach them, how many ranks
// each runs and which fabric they use. Parsed from one YAML file.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/expected.h"

namespace xft::inventory {

enum class RanksKind { count, per_socket, per_numa };

struct Ranks {
  RanksKind kind = RanksKind::count;
  int count = 1;  // meaningful when kind == count
};

struct Fabric {
  std::string provider = "tcp;ofi_rxm";  // libfabric provider string
  std::string iface;                     // network interface the fabric uses
  // NAME=VALUE for every rank on the host (PSM3_*, FI_*): not secrets, they go on mpirun's command line.
  std::vector<std::pair<std::string, std::string>> env;
};

// How a host authenticates. A password is never stored: only the name of the
// environment variable that holds it, or a request to prompt for it.
struct Credentials {
  std::string key;           // private key path, ~ expanded; empty when none
  std::string password_env;  // environment variable name; empty when none
  bool password_prompt = false;
};

// An NFS server that exports the shared path to the other hosts.
struct Nfs {
  std::string server;   // inventory host name of the exporting host
  std::string export_path;  // path exported on the server (default: the shared path)
  std::string options = "rw,sync,no_root_squash,no_subtree_check";
};

// How a step that needs root gets it when the login user is not root.
enum class Become { none, sudo };

// A bastion the SSH session goes through: `[user@]host[:port]`; an empty user
// means the login user of the host behind it.
struct JumpHost {
  std::string user;
  std::string address;
  int port = 22;

  std::string text() const;  // as written: "ec2-user@bastion:2222"
  bool operator==(const JumpHost&) const = default;
};

// At most this many bastions in a row (ProxyJump a,b).
constexpr size_t kMaxJumpHosts = 2;

struct Host {
  std::string name;
  std::string address;
  std::string user = "root";
  int port = 22;
  Credentials credentials;
  Become become = Become::none;
  // The environment variable holding the sudo password (fed to sudo's stdin,
  // never on a command line); empty: sudo must not ask (sudo -n).
  std::string become_password_env;
  std::vector<JumpHost> jump;  // outermost bastion first
  // Which reach fields the inventory set (defaults, a group or the host):
  // ~/.ssh/config fills in only the others.
  struct Given {
    bool address = false, user = false, port = false, jump = false;
  } given;
  // How the host's key is checked, from ~/.ssh/config (UserKnownHostsFile,
  // StrictHostKeyChecking): the inventory has no such fields, so only the
  // command line's --known-hosts and --accept-new-host-keys outrank them.
  struct HostKeys {
    std::string known_hosts;          // empty: xftctl's own file
    std::optional<bool> accept_new;   // accept-new/no: true; yes/ask: false; unset: the command line's
  } host_keys;
  Ranks ranks;
  Fabric fabric;
  std::string shared;               // path every host must see the same; empty when none
  std::vector<std::string> groups;  // groups the host belongs to
  int line = 0;                     // line in the inventory file where the host was declared
};

struct Inventory {
  std::string path;  // file it was read from
  std::vector<Host> hosts;
  std::map<std::string, std::vector<std::string>> groups;  // group -> host names
  std::optional<Nfs> nfs;

  const Host* find(const std::string& name_or_address) const;
};

}  // namespace xft::inventory
