// Importing the Ansible INI inventory that the xFasterTransformer demo ships
// ([all_hosts], [all_hosts:vars], [group], [group:children]).
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "inventory/inventory.h"

namespace xft::inventory {

struct AnsibleImport {
  Inventory inventory;
  // "path:line:col: variable: ignored (...)" for Ansible variables that have
  // no inventory field; the import still succeeds.
  std::vector<std::string> warnings;
};

// Errors are "path:line:col: what (fix)", all of them, one per line. A stored
// password (ansible_ssh_pass, ansible_password, ...) is refused.
Expected<AnsibleImport> import_ansible(const std::string& ini_text, const std::string& path);

}  // namespace xft::inventory
