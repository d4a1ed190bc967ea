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

struct Host {
  std::string name;
  std::string address;
  std::string user = "root";
  int port = 22;
  Credentials credentials;
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
