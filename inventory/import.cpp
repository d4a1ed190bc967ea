#include "inventory/import.h"

#include <sstream>

namespace xft::inventory {

ImportFormat detect_import_format(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  bool slots = false;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string word;
    if (!(words >> word) || word[0] == '#' || word[0] == ';') continue;
    if (word[0] == '[' || word.find('=') != std::string::npos) return ImportFormat::ansible;
    while (words >> word && word[0] != '#') {
      if (word.rfind("slots=", 0) == 0) slots = true;
      else if (word.find('=') != std::string::npos) return ImportFormat::ansible;
    }
  }
  return slots ? ImportFormat::deepspeed : ImportFormat::ansible;
}

void apply_password_env(Inventory& inventory, const ImportOptions& options) {
  if (options.password_env.empty()) return;
  for (auto& host : inventory.hosts) {
    const Credentials& c = host.credentials;
    if (c.key.empty() && c.password_env.empty() && !c.password_prompt) host.credentials.password_env = options.password_env;
  }
}

}  // namespace xft::inventory
