// Every row of tests/data/hostile/values.tsv against the parsers: a `reject`
// value placed in its field must fail with one error line at the value's
// position naming the field; a `literal` value must come out of the parser
// byte for byte. extra_var rows are read by tests/unit/playbooks/extra_vars_test.cpp.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "inventory/ansible.h"
#include "inventory/grammar.h"
#include "inventory/load.h"
#include "tests/unit/hostile_corpus.h"

using namespace xft::inventory;
using xft::testing::describe_row;
using xft::testing::HostileRow;
using xft::testing::read_hostile_corpus;

namespace {

// A YAML double-quoted scalar that yaml-cpp reads back as exactly `value`.
std::string yaml_quoted(const std::string& value) {
  std::string out = "\"";
  for (unsigned char c : value) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);  // bytes >= 0x80 too: a \x escape would mean a code point
    }
  }
  return out + "\"";
}

std::string ranks_text(const Ranks& ranks) {
  if (ranks.kind == RanksKind::per_socket) return "per-socket";
  if (ranks.kind == RanksKind::per_numa) return "per-numa";
  return std::to_string(ranks.count);
}

// An inventory with the value in one field, where its error must point, and
// how to read the field back from the parsed inventory.
struct Placement {
  std::string yaml;
  std::string field;  // as errors name it
  int line;           // 1-based position of the value
  int column;
  std::function<std::string(const Inventory&)> read_back;
};

const std::string one_host = "hosts:\n  - {name: h01, address: 10.0.0.1}\n";

const Host& first(const Inventory& inventory) { return inventory.hosts.at(0); }

Placement in_defaults(const std::string& key, const std::string& value,
                      std::function<std::string(const Host&)> read) {
  std::string prefix = "  " + key + ": ";
  return {"defaults:\n" + prefix + yaml_quoted(value) + "\n" + one_host, "defaults." + key, 2,
          static_cast<int>(prefix.size()) + 1, [read](const Inventory& inventory) { return read(first(inventory)); }};
}

Placement in_fabric(const std::string& key, const std::string& value, std::function<std::string(const Host&)> read) {
  std::string prefix = "  fabric: {" + key + ": ";
  return {"defaults:\n" + prefix + yaml_quoted(value) + "}\n" + one_host, "defaults.fabric." + key, 2,
          static_cast<int>(prefix.size()) + 1, [read](const Inventory& inventory) { return read(first(inventory)); }};
}

// fabric.env rows are the value of one variable, XFT_HOSTILE.
Placement in_fabric_env(const std::string& value) {
  std::string prefix = "  fabric: {env: {XFT_HOSTILE: ";
  return {"defaults:\n" + prefix + yaml_quoted(value) + "}}\n" + one_host, "defaults.fabric.env.XFT_HOSTILE", 2,
          static_cast<int>(prefix.size()) + 1, [](const Inventory& inventory) {
            const auto& env = first(inventory).fabric.env;
            return env.size() == 1 && env[0].first == "XFT_HOSTILE" ? env[0].second : std::string("<no XFT_HOSTILE>");
          }};
}

// nfs: needs a server host; options need an export (the host has no shared path).
Placement in_nfs(const std::string& key, const std::string& value, std::function<std::string(const Nfs&)> read) {
  std::string yaml = one_host + "nfs:\n  server: h01\n";
  int line = 5;
  if (key != "export") {
    yaml += "  export: /srv\n";
    ++line;
  }
  std::string prefix = "  " + key + ": ";
  return {yaml + prefix + yaml_quoted(value) + "\n", "nfs." + key, line, static_cast<int>(prefix.size()) + 1,
          [read](const Inventory& inventory) { return read(*inventory.nfs); }};
}

std::optional<Placement> place(const std::string& field, const std::string& value) {
  using H = const Host&;
  if (field == "user") return in_defaults("user", value, [](H h) { return h.user; });
  if (field == "key") return in_defaults("key", value, [](H h) { return h.credentials.key; });
  if (field == "shared") return in_defaults("shared", value, [](H h) { return h.shared; });
  if (field == "port") return in_defaults("port", value, [](H h) { return std::to_string(h.port); });
  if (field == "ranks") return in_defaults("ranks", value, [](H h) { return ranks_text(h.ranks); });
  if (field == "password_env") return in_defaults("password_env", value, [](H h) { return h.credentials.password_env; });
  if (field == "become")
    return in_defaults("become", value, [](H h) { return std::string(h.become == Become::sudo ? "sudo" : "none"); });
  if (field == "become_password_env")
    return in_defaults("become_password_env", value, [](H h) { return h.become_password_env; });
  if (field == "jump")
    return in_defaults("jump", value, [](H h) { return h.jump.empty() ? std::string() : h.jump.front().text(); });
  if (field == "fabric.iface") return in_fabric("iface", value, [](H h) { return h.fabric.iface; });
  if (field == "fabric.provider") return in_fabric("provider", value, [](H h) { return h.fabric.provider; });
  if (field == "fabric.env") return in_fabric_env(value);
  if (field == "nfs.options") return in_nfs("options", value, [](const Nfs& n) { return n.options; });
  if (field == "nfs.export") return in_nfs("export", value, [](const Nfs& n) { return n.export_path; });
  if (field == "name")
    return Placement{"hosts:\n  - name: " + yaml_quoted(value) + "\n    address: 10.0.0.1\n", "hosts[0].name", 2, 11,
                     [](const Inventory& inventory) { return first(inventory).name; }};
  if (field == "address")
    return Placement{"hosts:\n  - name: h01\n    address: " + yaml_quoted(value) + "\n", "hosts[0].address", 3, 14,
                     [](const Inventory& inventory) { return first(inventory).address; }};
  return std::nullopt;
}

// The same for `inventory import`: ansible.<variable> rows.
struct IniPlacement {
  std::string text;
  int column;  // 1-based column of the variable on line 2
  std::function<std::string(const Host&)> read_back;
};

std::optional<std::function<std::string(const Host&)>> ansible_reader(const std::string& variable) {
  using H = const Host&;
  if (variable == "ansible_user" || variable == "ansible_ssh_user") return [](H h) { return h.user; };
  if (variable == "ansible_port" || variable == "ansible_ssh_port") return [](H h) { return std::to_string(h.port); };
  if (variable == "ansible_host" || variable == "ansible_ssh_host") return [](H h) { return h.address; };
  if (variable == "ansible_ssh_private_key_file" || variable == "ansible_private_key_file")
    return [](H h) { return h.credentials.key; };
  return std::nullopt;
}

// An INI word keeps its spaces inside quotes; a line break cannot be carried.
std::optional<std::string> ini_quoted(const std::string& value) {
  if (value.find('\n') != std::string::npos) return std::nullopt;
  if (value.find('"') == std::string::npos) return "\"" + value + "\"";
  if (value.find('\'') == std::string::npos) return "'" + value + "'";
  return std::nullopt;
}

std::set<std::string> inventory_fields() {
  return {"user", "key", "shared", "fabric.iface", "fabric.provider", "fabric.env", "port", "ranks", "password_env",
          "become", "become_password_env", "jump", "nfs.options", "nfs.export", "name", "address"};
}

bool is_ansible_row(const HostileRow& row) { return row.field.rfind("ansible.", 0) == 0; }

std::vector<HostileRow> rows_where(const std::function<bool(const HostileRow&)>& wanted) {
  std::vector<HostileRow> rows;
  for (auto& row : read_hostile_corpus())
    if (wanted(row)) rows.push_back(row);
  return rows;
}

}  // namespace

TEST(HostileValues, EveryRowHasAKnownField) {
  auto rows = read_hostile_corpus();
  ASSERT_FALSE(rows.empty());
  auto fields = inventory_fields();
  for (const auto& row : rows) {
    // sync_dest: the sync integration test; CCL_ALLREDUCE: tests/unit/cli/allreduce_selection_test.cpp;
    // first_host_*: tests/unit/launcher/launch_through_test.cpp.
    bool known = fields.count(row.field) || row.field == "extra_var" || row.field == "sync_dest" ||
                 row.field == "CCL_ALLREDUCE" || row.field == "first_host_arg" || row.field == "first_host_env" ||
                 (is_ansible_row(row) && ansible_reader(row.field.substr(8)));
    EXPECT_TRUE(known) << describe_row(row) << ": no test consumes FIELD " << row.field
                       << " (teach hostile_values_test.cpp or extra_vars_test.cpp the field)";
  }
}

namespace {

// One row each, so that a failing row does not stop the others (ASSERT returns from here).
void check_inventory_row(const HostileRow& row) {
  auto placement = place(row.field, row.value);
  ASSERT_TRUE(placement);
  auto parsed = parse_inventory(placement->yaml, "inv.yaml");
  if (row.expect == "literal") {
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(placement->read_back(*parsed), row.value);
    return;
  }
  ASSERT_FALSE(parsed) << "accepted:\n" << placement->yaml;
  const std::string& message = parsed.error().message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  std::string where = "inv.yaml:" + std::to_string(placement->line) + ":" + std::to_string(placement->column) +
                      ": " + placement->field + ": ";
  EXPECT_EQ(message.substr(0, where.size()), where) << message;
}

void check_ansible_row(const HostileRow& row) {
  std::string variable = row.field.substr(8);
  auto read_back = ansible_reader(variable);
  ASSERT_TRUE(read_back) << "unknown Ansible variable";
  auto value = ini_quoted(row.value);
  ASSERT_TRUE(value) << "an INI value cannot hold both quote kinds or a line break; change the row";
  std::string line = "h01 ";
  if (variable != "ansible_host" && variable != "ansible_ssh_host") line += "ansible_host=10.0.0.1 ";
  int column = static_cast<int>(line.size()) + 1;
  line += variable + "=" + *value;
  auto imported = import_ansible("[all_hosts]\n" + line + "\n", "hosts.ini");
  if (row.expect == "literal") {
    ASSERT_TRUE(imported) << imported.error().message;
    EXPECT_EQ((*read_back)(imported->inventory.hosts.at(0)), row.value);
    return;
  }
  ASSERT_FALSE(imported) << "accepted: " << line;
  const std::string& message = imported.error().message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  std::string where = "hosts.ini:2:" + std::to_string(column) + ": " + variable + ": ";
  EXPECT_EQ(message.substr(0, where.size()), where) << message;
}

void check_sync_dest_row(const HostileRow& row) {
  auto problem = check_absolute_path(row.value);
  if (row.expect == "literal") {
    EXPECT_EQ(problem, std::nullopt);
    return;
  }
  ASSERT_TRUE(problem) << "accepted";
  EXPECT_EQ(problem->find('\n'), std::string::npos) << *problem;
}

// Runs `check` on every row `wanted` selects; there must be some.
void for_rows(const std::function<bool(const HostileRow&)>& wanted, void (*check)(const HostileRow&)) {
  auto rows = rows_where(wanted);
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    SCOPED_TRACE(describe_row(row) + " " + quoted_value(row.value));
    check(row);
  }
}

}  // namespace

TEST(HostileValues, InventoryFields) {
  auto fields = inventory_fields();
  for_rows([&](const HostileRow& row) { return fields.count(row.field) > 0; }, check_inventory_row);
}

TEST(HostileValues, AnsibleImport) { for_rows(is_ansible_row, check_ansible_row); }

TEST(HostileValues, SyncDest) {
  for_rows([](const HostileRow& row) { return row.field == "sync_dest"; }, check_sync_dest_row);
}

TEST(HostileValues, CorpusEscapes) {
  EXPECT_EQ(xft::testing::decode_c_escapes("a\\nb\\tc\\rd\\\\e\\x1bf"), "a\nb\tc\rd\\e\x1b" "f");
  EXPECT_THROW(xft::testing::decode_c_escapes("a\\qb"), std::runtime_error);
  EXPECT_THROW(xft::testing::decode_c_escapes("a\\"), std::runtime_error);
  EXPECT_THROW(xft::testing::decode_c_escapes("a\\x1"), std::runtime_error);
}
