// Importing the Ansible INI inventory that the xFasterTransformer demo ships
// ([all_hosts], [all_hosts:vars], [group], [group:children]).
#pragma once

#include <string>

#include "common/expected.h"
#include "inventory/import.h"

namespace xft::inventory {

// Errors are "path:line:col: what (fix)", all of them, one per line. A stored
// password (ansible_ssh_pass, ansible_password, ...) is refused unless
// options.password_env names the variable to read it from instead; its value
// is never kept nor shown.
Expected<ImportResult> import_ansible(const std::string& ini_text, const std::string& path,
                                      const ImportOptions& options = {});

}  // namespace xft::inventory
