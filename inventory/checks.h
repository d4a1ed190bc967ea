// Small predicates shared by the YAML parser and the Ansible importer.
#pragma once

#include <string>

namespace xft::inventory {

bool is_ip_literal(const std::string& text);  // IPv4 dotted quad or IPv6
// RFC 1123 host name: dot-separated labels of letters, digits and '-', not
// starting or ending with '-'; an all-numeric last label is rejected so that
// "192.168.0.300" is reported instead of being taken as a name.
bool is_dns_name(const std::string& text);
bool is_valid_address(const std::string& text);
// Inventory names are labels people type: letters, digits, '.', '-', '_'.
bool is_inventory_name(const std::string& text);
bool is_env_var_name(const std::string& text);
// "~" and "~/x" -> $HOME and $HOME/x; other paths unchanged.
std::string expand_home(const std::string& path);

}  // namespace xft::inventory
