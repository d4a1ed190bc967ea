#include "inventory/checks.h"

#include <arpa/inet.h>
#include <cctype>
#include <cstdlib>
#include <pwd.h>
#include <unistd.h>

namespace xft::inventory {
namespace {

bool is_label(const std::string& label) {
  if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
  for (unsigned char c : label)
    if (!std::isalnum(c) && c != '-') return false;
  return true;
}

bool all_digits(const std::string& text) {
  for (unsigned char c : text)
    if (!std::isdigit(c)) return false;
  return true;
}

}  // namespace

bool is_ip_literal(const std::string& text) {
  unsigned char buffer[16];
  return inet_pton(AF_INET, text.c_str(), buffer) == 1 || inet_pton(AF_INET6, text.c_str(), buffer) == 1;
}

bool is_dns_name(const std::string& text) {
  std::string name = text;
  if (!name.empty() && name.back() == '.') name.pop_back();  // fully qualified "host.example."
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  std::string label;
  while (true) {
    size_t dot = name.find('.', start);
    label = name.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!is_label(label)) return false;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return !all_digits(label);
}

bool is_valid_address(const std::string& text) { return is_ip_literal(text) || is_dns_name(text); }

bool is_inventory_name(const std::string& text) {
  if (text.empty() || text.size() > 253 || text.front() == '-') return false;
  for (unsigned char c : text)
    if (!std::isalnum(c) && c != '.' && c != '-' && c != '_') return false;
  return true;
}

bool is_env_var_name(const std::string& text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  for (unsigned char c : text)
    if (!std::isalnum(c) && c != '_') return false;
  return true;
}

std::string expand_home(const std::string& path) {
  if (path.empty() || path[0] != '~' || (path.size() > 1 && path[1] != '/')) return path;
  std::string home;
  if (const char* env = std::getenv("HOME"); env && *env) {
    home = env;
  } else if (const passwd* entry = getpwuid(getuid())) {
    home = entry->pw_dir;
  }
  return home + path.substr(1);
}

}  // namespace xft::inventory
