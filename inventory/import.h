// Converting the host lists other tools keep into our inventory: the Ansible
// INI file the xFasterTransformer demo ships (inventory/ansible.h) and
// DeepSpeed's hostfile (inventory/deepspeed.h).
#pragma once

#include <string>
#include <vector>

#include "inventory/inventory.h"

namespace xft::inventory {

struct ImportOptions {
  // Environment variable holding the SSH password of every host without a
  // key; a password found in the file is never copied, this name stands in
  // its place. Empty: a password in the file is refused.
  std::string password_env;
};

struct ImportResult {
  Inventory inventory;
  // "path:line:col: variable: ignored (...)" for what has no inventory field;
  // the import still succeeds.
  std::vector<std::string> warnings;
};

enum class ImportFormat { ansible, deepspeed };

// DeepSpeed when some line reads `NAME slots=N` and the file has no
// [section] and no NAME=VALUE word other than slots=; otherwise Ansible.
ImportFormat detect_import_format(const std::string& text);

// Every host that has no key, password_env or prompt gets
// password_env: options.password_env (when one is given).
void apply_password_env(Inventory& inventory, const ImportOptions& options);

}  // namespace xft::inventory
