// Reading the inventory: locating the file, parsing and validating its YAML,
// and the ClusterShell host ranges used both in the file and in output folding.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "inventory/inventory.h"

namespace xft::inventory {

// Parses YAML text; `path` appears in errors "path:line:col: field: what is wrong (fix)".
// All errors of the file are collected; Error.message holds them one per line.
Expected<Inventory> parse_inventory(const std::string& yaml_text, const std::string& path);
Expected<Inventory> load_inventory(const std::string& path);

// -i FILE (flag), then $XFTCTL_INVENTORY, then ./inventory.yaml; error says which were tried.
Expected<std::string> locate_inventory(const std::string& flag);

// ClusterShell ranges: "node[01-04,07]" -> node01..node04,node07 (zero padding kept); several bracket
// groups allowed (cartesian, like nodeset); "192.168.0.[1-4]".
Expected<std::vector<std::string>> expand_range(const std::string& pattern);

// The inverse, as ClusterShell folds: {node01,node02,node03,node07} -> "node[01-03,07]"; names with
// different prefixes/suffixes are joined with ",". Used by `xftctl exec` output folding.
std::string fold_names(const std::vector<std::string>& names);

// Hosts named by a pattern (`--limit`, a playbook's `hosts:`), Ansible's grammar over ClusterShell
// names: words joined by ',' or ':' outside brackets, each "all", a group, a host name or address, a
// range (node[01-04]) or a glob (h0*); "@name" is a group only, "&word" intersects and "!word"
// excludes, applied after the plain words (only ! and & words: they narrow every host). Inventory
// order, each host once; empty selects every host. A word that matches nothing is an error naming it
// (with "did you mean"), so a typo cannot silently shrink or widen a run; so is a pattern that leaves
// no host.
Expected<std::vector<Host>> select_hosts(const Inventory& inventory, const std::string& targets);

}  // namespace xft::inventory
