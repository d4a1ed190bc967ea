// Keeps one marked block of lines inside a text file (e.g. the xftctl block in
// /etc/hosts) equal to the wanted content while every line outside the markers
// stays byte-for-byte as it was. Pure string functions, so the `setup hosts`
// /etc/hosts step and unit tests share them; the caller compares the result
// with the current content to decide ok vs changed (idempotency).
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"

namespace xft::playbooks {

struct HostEntry {
  std::string name;
  std::string address;
};

// "# BEGIN <marker>" / "# END <marker>" lines delimit the block.
std::string begin_marker_line(const std::string& marker);
std::string end_marker_line(const std::string& marker);

// Returns `content` with the block replaced by `block_body` (lines, each ending
// in '\n'); appends the block at the end when absent. Fails on a BEGIN without
// END or a second block, naming the line, because guessing would eat user lines.
xft::Expected<std::string> replace_managed_block(const std::string& content, const std::string& marker,
                                                 const std::string& block_body);

// "<address> <name>\n" per host, in inventory order.
std::string render_hosts_block_body(const std::vector<HostEntry>& hosts);

}  // namespace xft::playbooks
