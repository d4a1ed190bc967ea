#include "inventory/grammar.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <vector>

#include "inventory/checks.h"

namespace xft::inventory {
namespace {

constexpr size_t max_shown_bytes = 100;
constexpr size_t max_path_bytes = 4096;  // PATH_MAX
constexpr size_t max_user_name = 32;
constexpr size_t max_interface_name = 15;  // IFNAMSIZ - 1

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }
bool is_printable_ascii(unsigned char c) { return c >= 0x20 && c <= 0x7e; }
bool is_letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_word_char(unsigned char c) { return is_letter(c) || is_digit(c) || c == '_'; }
bool is_one_of(unsigned char c, std::string_view set) { return set.find(static_cast<char>(c)) != set.npos; }

std::string escape_byte(unsigned char c) {
  switch (c) {
    case '\n': return "\\n";
    case '\t': return "\\t";
    case '\r': return "\\r";
    case '\\': return "\\\\";
  }
  if (is_printable_ascii(c)) return std::string(1, static_cast<char>(c));
  char text[5];
  std::snprintf(text, sizeof text, "\\x%02x", c);
  return text;
}

// What a character is called in a message; never the raw byte when it is not
// printable.
std::string name_of(unsigned char c) {
  switch (c) {
    case ' ': return "a space";
    case '\'': return "a single quote";
    case '"': return "a double quote";
    case '`': return "a backtick";
    case '\\': return "a backslash";
  }
  if (is_control(c)) return "the control character " + escape_byte(c);
  if (c >= 0x80) return "the non-ASCII byte " + escape_byte(c);
  return "'" + std::string(1, static_cast<char>(c)) + "'";
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == text.npos ? text.npos : end - start));
    if (end == text.npos) return parts;
    start = end + 1;
  }
}

bool has_dot_dot_component(std::string_view path) {
  for (auto component : split(path, '/'))
    if (component == "..") return true;
  return false;
}

// The rules absolute and key paths share: what may be passed, quoted, to a
// remote shell, written to fstab/exports, and shown on one line.
Problem path_characters(std::string_view value) {
  if (value.size() > max_path_bytes)
    return quoted_value(value) + " is longer than 4096 bytes (use a shorter path)";
  for (unsigned char c : value) {
    if (!is_printable_ascii(c))
      return quoted_value(value) + " contains " + name_of(c) +
             " (a path must be printable ASCII on one line; rename it, or link it from such a path)";
    if (is_one_of(c, "'\"`\\"))
      return quoted_value(value) + " contains " + name_of(c) +
             " (quotes, backticks and backslashes are not allowed in paths; rename it, or link it from a "
             "path without them)";
  }
  if (has_dot_dot_component(value)) {
    std::string normal = std::filesystem::path(std::string(value)).lexically_normal().generic_string();
    std::string example = has_dot_dot_component(normal) ? "" : ", e.g. " + normal;
    return quoted_value(value) + " has a .. component (write the path without it" + example + ")";
  }
  return std::nullopt;
}

}  // namespace

std::string printable(std::string_view value) {
  std::string out;
  for (unsigned char c : value.substr(0, max_shown_bytes)) out += escape_byte(c);
  if (value.size() > max_shown_bytes) out += "... (" + std::to_string(value.size()) + " bytes)";
  return out;
}

std::string quoted_value(std::string_view value) { return "`" + printable(value) + "`"; }

std::string one_line(std::string_view text) {
  std::string out;
  for (unsigned char c : text) out += is_control(c) ? escape_byte(c) : std::string(1, static_cast<char>(c));
  return out;
}

Problem check_user_name(std::string_view value) {
  bool valid = !value.empty() && value.size() <= max_user_name && value[0] != '-' &&
               std::all_of(value.begin(), value.end(),
                           [](unsigned char c) { return is_word_char(c) || c == '.' || c == '-'; });
  if (valid) return std::nullopt;
  return quoted_value(value) +
         " is not a valid user name (POSIX portable names: letters, digits, '.', '_', '-', not starting "
         "with '-'; at most 32 characters)";
}

Problem check_absolute_path(std::string_view value) {
  if (value.empty() || value[0] != '/')
    return quoted_value(value) + " is not an absolute path (write it from /, e.g. /mnt)";
  return path_characters(value);
}

Problem check_key_path(std::string_view value) {
  if (value.empty()) return "is empty (give the private key's path, e.g. ~/.ssh/id_ed25519)";
  return path_characters(value);
}

Problem check_interface_name(std::string_view value) {
  auto invalid = [&](const std::string& reason) -> Problem {
    return quoted_value(value) + " is not a valid interface name: " + reason +
           " (use the name `ip link` shows, e.g. eth0 or ib0)";
  };
  if (value.empty()) return invalid("it is empty");
  if (value.size() > max_interface_name) return invalid("longer than 15 characters");
  if (value == "." || value == "..") return invalid(". and .. are not names");
  if (value[0] == '-') return invalid("it starts with '-'");
  for (unsigned char c : value)
    if (!is_printable_ascii(c) || is_one_of(c, "/: '\"`\\$")) return invalid(name_of(c) + " is not allowed");
  return std::nullopt;
}

Problem check_provider(std::string_view value) {
  auto invalid = [&](const std::string& reason) -> Problem {
    return quoted_value(value) + " is not a valid libfabric provider list: " + reason +
           " (names of letters, digits and _, layered with ';', listed with ',', '^' before an item excludes "
           "it; e.g. tcp;ofi_rxm or ^psm3,verbs;ofi_rxm)";
  };
  if (value.empty()) return invalid("it is empty");
  for (unsigned char c : value)
    if (!is_word_char(c) && !is_one_of(c, ";,^")) return invalid(name_of(c) + " is not allowed");
  for (auto item : split(value, ',')) {
    if (!item.empty() && item[0] == '^') item.remove_prefix(1);
    for (auto name : split(item, ';')) {
      if (name.empty()) return invalid("an empty name");
      if (name.find('^') != name.npos) return invalid("'^' may only start an item");
    }
  }
  return std::nullopt;
}

Problem check_nfs_options(std::string_view value) {
  auto invalid = [&](const std::string& reason) -> Problem {
    return quoted_value(value) + " is not a valid NFS option list: " + reason +
           " (comma-separated name or name=value without spaces, e.g. rw,sync,no_subtree_check,anonuid=65534)";
  };
  if (value.empty()) return invalid("it is empty");
  for (unsigned char c : value)
    if (!is_word_char(c) && !is_one_of(c, ".:/@+-=,")) return invalid(name_of(c) + " is not allowed");
  for (auto token : split(value, ',')) {
    if (token.empty()) return invalid("an empty option");
    size_t equals = token.find('=');
    auto key = token.substr(0, equals);
    bool key_ok = !key.empty() && !is_digit(key[0]) && std::all_of(key.begin(), key.end(), is_word_char);
    if (!key_ok) return invalid("option " + quoted_value(token) + " does not start with a name of letters, digits and _");
    if (equals == token.npos) continue;
    auto option_value = token.substr(equals + 1);
    if (option_value.empty()) return invalid("option " + quoted_value(token) + " has no value after '='");
    if (option_value.find('=') != option_value.npos) return invalid("option " + quoted_value(token) + " has two '='");
  }
  return std::nullopt;
}

Problem check_port(std::string_view value) {
  if (value.empty() || !std::all_of(value.begin(), value.end(), is_digit))
    return quoted_value(value) + " is not a port number (use 1..65535, usually 22)";
  int number = value.size() > 5 ? 0 : std::stoi(std::string(value));
  if (number < 1 || number > 65535) return printable(value) + " is out of range (use 1..65535, usually 22)";
  return std::nullopt;
}

Problem check_env_var_name(std::string_view value) {
  if (is_env_var_name(std::string(value))) return std::nullopt;
  return quoted_value(value) + " is not an environment variable name (use letters, digits and _, e.g. XFT_SSH_PASSWORD)";
}

Problem check_host_name(std::string_view value) {
  if (is_inventory_name(std::string(value))) return std::nullopt;
  return quoted_value(value) + " is not a valid host name (use letters, digits, '.', '-', '_', not starting with '-')";
}

Problem check_address(std::string_view value) {
  if (is_valid_address(std::string(value))) return std::nullopt;
  return quoted_value(value) + " is not an IPv4/IPv6 address or a valid DNS host name";
}

Problem check_become(std::string_view value) {
  if (value == "sudo" || value == "none") return std::nullopt;
  return quoted_value(value) + " is not a way to become root (use sudo, or none for a root login)";
}

Problem check_jump_host(std::string_view value, JumpHost* parsed) {
  const std::string form = " (use [user@]host[:port], e.g. ec2-user@bastion.example.com:22)";
  if (value.empty()) return "is empty" + form;
  JumpHost jump;
  std::string_view rest = value;
  if (size_t at = rest.find('@'); at != std::string_view::npos) {
    std::string_view user = rest.substr(0, at);
    if (user.empty()) return quoted_value(value) + " has an empty user before '@'" + form;
    if (auto problem = check_user_name(user)) return *problem;
    jump.user = std::string(user);
    rest = rest.substr(at + 1);
  }
  std::optional<std::string_view> port;
  if (!rest.empty() && rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return quoted_value(value) + " opens '[' without ']'" + form;
    jump.address = std::string(rest.substr(1, close - 1));
    std::string_view after = rest.substr(close + 1);
    if (!after.empty() && after.front() != ':') return quoted_value(value) + " has text after ']'" + form;
    if (!after.empty()) port = after.substr(1);
    if (jump.address.find(':') == std::string::npos)
      return quoted_value(value) + ": brackets are for IPv6 addresses only" + form;
  } else {
    size_t colon = rest.find(':');
    if (colon != std::string_view::npos && rest.find(':', colon + 1) != std::string_view::npos)
      return quoted_value(value) + ": an IPv6 address goes in brackets, [addr]:port" + form;
    jump.address = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
  }
  if (auto problem = check_address(jump.address)) return *problem + form;
  if (port) {
    if (auto problem = check_port(*port)) return *problem;
    jump.port = std::stoi(std::string(*port));
  }
  if (parsed) *parsed = std::move(jump);
  return std::nullopt;
}

}  // namespace xft::inventory
