// The grammar of every inventory value that reaches a host: one predicate per
// kind of field. xftctl runs commands as root on every host from an inventory
// someone else may have written, so each value is held to the smallest
// language its consumers need. Each check returns the problem with its fix
// ("`x` is not ... (use ...)") or nullopt when the value is fine; the caller
// adds "path:line:col: field: ".
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "inventory/inventory.h"

namespace xft::inventory {

using Problem = std::optional<std::string>;

// A value as it may appear inside a one-line message: backslash, control
// characters and bytes >= 0x80 as C escapes (\\, \n, \t, \r, \xNN); values
// longer than 100 bytes are cut and end with "... (N bytes)".
std::string printable(std::string_view value);
// printable(value) between backticks.
std::string quoted_value(std::string_view value);
// Control characters of a whole message escaped, so one problem stays one line.
std::string one_line(std::string_view text);

// POSIX portable user name: [A-Za-z0-9._][A-Za-z0-9._-]*, 1..32 characters.
Problem check_user_name(std::string_view value);
// Starts with '/'; printable ASCII without quotes, backtick or backslash; no
// ".." component; at most 4096 bytes. Spaces and shell metacharacters are
// allowed: every consumer quotes paths.
Problem check_absolute_path(std::string_view value);
// A private key path (after ~ expansion): the absolute path rules, but a path
// relative to the control node's working directory is allowed.
Problem check_key_path(std::string_view value);
// Linux network interface name (the kernel's dev_valid_name): 1..15 bytes,
// not "." or "..", no '/', ':' or whitespace; also printable ASCII without
// quotes, backslash, backtick or '$', not starting with '-' (it is an argument
// of mpirun and ip).
Problem check_interface_name(std::string_view value);
// libfabric FI_PROVIDER: comma-separated items, each optionally prefixed by
// '^' (exclude), each one or more names joined by ';' (layered); a name is
// [A-Za-z0-9_]+.
Problem check_provider(std::string_view value);
// NFS export options: comma-separated key[=value], key [A-Za-z_][A-Za-z0-9_]*,
// value [A-Za-z0-9_.:/@+-]+.
Problem check_nfs_options(std::string_view value);
// SSH port: decimal 1..65535.
Problem check_port(std::string_view value);
// Environment variable name: [A-Za-z_][A-Za-z0-9_]*.
Problem check_env_var_name(std::string_view value);
// Inventory host name: letters, digits, '.', '-', '_', not starting with '-'.
Problem check_host_name(std::string_view value);
// IPv4/IPv6 literal or DNS name.
Problem check_address(std::string_view value);
// become: `sudo` (run root's steps through sudo) or `none`.
Problem check_become(std::string_view value);
// One bastion: [user@]host[:port], host an IPv4 address, a DNS name or an
// [IPv6] literal in brackets; user and port as for a host. Fills `parsed`.
Problem check_jump_host(std::string_view value, JumpHost* parsed = nullptr);

}  // namespace xft::inventory
