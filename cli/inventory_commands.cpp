// `xftctl inventory show|validate|import`: look at, check and create the
// inventory file every other command reads.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "common/atomic_file.h"
#include "inventory/ansible.h"
#include "inventory/checks.h"
#include "inventory/deepspeed.h"
#include "inventory/load.h"
#include "inventory/show.h"
#include "inventory/write.h"
#include "common/log.h"

namespace xft::cli {
namespace {

using namespace xft::inventory;

// Parse errors are already "file:line:col: ..." lines; others get our name.
void print_error(const Error& error, bool positional) {
  if (positional)
    log::write_located(log::Level::err, error.message);
  else
    log::error(error.message);
}

// Finds and parses the inventory, or prints why not and sets the exit code.
std::optional<Inventory> load_for_command(Context& ctx) {
  auto path = locate_inventory(ctx.inventory_flag);
  if (!path) {
    print_error(path.error(), false);
    ctx.exit_code = exit_error;
    return std::nullopt;
  }
  auto inventory = load_inventory(*path);
  if (!inventory) {
    // A file that cannot be read has no position; parse errors all do.
    print_error(inventory.error(), inventory.error().message.rfind(*path + ":", 0) == 0);
    ctx.exit_code = exit_error;
    return std::nullopt;
  }
  return std::move(*inventory);
}

nlohmann::ordered_json host_json(const Host& host) {
  nlohmann::ordered_json ranks = host.ranks.kind == RanksKind::count ? nlohmann::ordered_json(host.ranks.count)
                                                              : nlohmann::ordered_json(ranks_label(host.ranks));
  return {{"name", host.name},
          {"address", host.address},
          {"user", host.user},
          {"port", host.port},
          {"ranks", ranks},
          {"fabric", {{"provider", host.fabric.provider}, {"iface", host.fabric.iface}}},
          {"shared", host.shared},
          {"auth", auth_label(host.credentials)},
          {"groups", host.groups}};
}

void show(Context& ctx, bool as_json) {
  auto inventory = load_for_command(ctx);
  if (!inventory) return;
  if (as_json) {
    nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
    for (const auto& host : inventory->hosts) hosts.push_back(host_json(host));
    std::cout << hosts.dump(2) << "\n";
  } else {
    std::cout << format_hosts_table(*inventory);
  }
}

// "file:line:col: message" lines as objects; a line without a position
// (a file that cannot be read) keeps only its message.
nlohmann::ordered_json problems_json(const std::string& message) {
  static const std::regex located(R"(^(.*):(\d+):(\d+): (.*)$)");
  nlohmann::ordered_json problems = nlohmann::ordered_json::array();
  std::istringstream lines(message);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, located))
      problems.push_back({{"file", m[1].str()}, {"line", std::stoi(m[2].str())}, {"column", std::stoi(m[3].str())},
                          {"message", m[4].str()}});
    else
      problems.push_back({{"message", line}});
  }
  return problems;
}

// --json: {"path", "ok", "hosts"} or {"path", "ok": false, "problems": [...]};
// the problems also go to stderr as without --json.
void validate_json(Context& ctx) {
  nlohmann::ordered_json doc = {{"path", nullptr}, {"ok", false}};
  auto path = locate_inventory(ctx.inventory_flag);
  Expected<Inventory> inventory = path ? load_inventory(*path) : Expected<Inventory>(path.error());
  if (path) doc["path"] = *path;
  if (inventory) {
    doc["ok"] = true;
    doc["hosts"] = inventory->hosts.size();
  } else {
    print_error(inventory.error(), path && inventory.error().message.rfind(*path + ":", 0) == 0);
    doc["problems"] = problems_json(inventory.error().message);
    ctx.exit_code = exit_error;
  }
  std::cout << doc.dump(2) << "\n";
}

void validate(Context& ctx, bool as_json) {
  if (as_json) return validate_json(ctx);
  auto inventory = load_for_command(ctx);
  if (!inventory) return;
  size_t count = inventory->hosts.size();
  std::cout << inventory->path << ": " << count << (count == 1 ? " host" : " hosts") << ", OK\n";
}

struct ImportFlags {
  std::string file;
  std::string output;
  std::string password_env;
  std::string format;  // ansible | deepspeed; empty: detected from the text
};

std::vector<std::string> sorted(std::vector<std::string> words) {
  std::sort(words.begin(), words.end());
  return words;
}

// The YAML must read back to the very hosts we imported; anything else is a
// bug here, and writing it would silently change the cluster.
Expected<void> check_round_trip(const Inventory& imported, const std::string& yaml) {
  auto reparsed = parse_inventory(yaml, "<imported yaml>");
  if (!reparsed) return make_error("internal error: the generated YAML does not parse: " + reparsed.error().message);
  bool same = reparsed->hosts.size() == imported.hosts.size();
  for (size_t i = 0; same && i < imported.hosts.size(); ++i) {
    const Host &a = imported.hosts[i], &b = reparsed->hosts[i];
    same = a.name == b.name && a.address == b.address && a.user == b.user && a.port == b.port &&
           auth_label(a.credentials) == auth_label(b.credentials) && a.ranks.kind == b.ranks.kind &&
           a.ranks.count == b.ranks.count && a.fabric.provider == b.fabric.provider &&
           a.fabric.iface == b.fabric.iface && a.shared == b.shared && sorted(a.groups) == sorted(b.groups);
  }
  if (!same) return make_error("internal error: the generated YAML reads back to different hosts");
  return {};
}

Expected<ImportResult> import_text(const std::string& text, const ImportFlags& flags) {
  ImportOptions options{flags.password_env};
  ImportFormat format = flags.format.empty()       ? detect_import_format(text)
                        : flags.format == "deepspeed" ? ImportFormat::deepspeed
                                                      : ImportFormat::ansible;
  if (format == ImportFormat::deepspeed) return import_deepspeed(text, flags.file, options);
  return import_ansible(text, flags.file, options);
}

bool reads_password_env(const Inventory& inventory, const std::string& name) {
  return !name.empty() && std::any_of(inventory.hosts.begin(), inventory.hosts.end(), [&](const Host& host) {
    return host.credentials.password_env == name;
  });
}

void import(Context& ctx, const ImportFlags& options) {
  ctx.exit_code = exit_error;
  if (!options.password_env.empty() && !is_env_var_name(options.password_env)) {
    print_error(make_error("--password-env: `" + options.password_env +
                           "` is not an environment variable name (use letters, digits and _)"),
                false);
    return;
  }
  auto text = read_file(options.file);
  if (!text) return print_error(text.error(), false);
  auto imported = import_text(*text, options);
  if (!imported) return print_error(imported.error(), true);
  for (const auto& warning : imported->warnings) spdlog::warn("{}", warning);
  Inventory& inventory = imported->inventory;
  std::string yaml = to_yaml(inventory);
  if (auto checked = check_round_trip(inventory, yaml); !checked) return print_error(checked.error(), false);
  if (options.output.empty()) {
    std::cout << yaml;
  } else if (auto written = write_file_atomic(options.output, yaml); !written) {
    return print_error(written.error(), false);
  } else {
    spdlog::info("wrote {}: {} {}", options.output, inventory.hosts.size(),
                 inventory.hosts.size() == 1 ? "host" : "hosts");
  }
  if (reads_password_env(inventory, options.password_env))
    spdlog::info("export {}=... (the SSH password) before running xftctl on this inventory", options.password_env);
  ctx.exit_code = exit_ok;
}

}  // namespace

void add_inventory_commands(CLI::App& app, Context& ctx) {
  auto* group = app.add_subcommand("inventory", "show, validate or import the cluster inventory");
  group->require_subcommand(1);

  auto* show_command = group->add_subcommand("show", "list the hosts with their connection and fabric settings");
  auto as_json = std::make_shared<bool>(false);
  show_command->add_flag("--json", *as_json, "print a JSON array of host objects");
  show_command->callback([&ctx, as_json] { show(ctx, *as_json); });

  auto* validate_command =
      group->add_subcommand("validate", "check the inventory and print every problem with its line");
  auto validate_json_flag = std::make_shared<bool>(false);
  validate_command->add_flag("--json", *validate_json_flag, "one JSON document: ok and the host count, or the problems");
  validate_command->callback([&ctx, validate_json_flag] { validate(ctx, *validate_json_flag); });

  auto options = std::make_shared<ImportFlags>();
  auto* import_command = group->add_subcommand(
      "import", "convert an Ansible INI inventory (as the XFT demo ships) or a DeepSpeed hostfile to YAML");
  import_command->add_option("file", options->file, "Ansible INI inventory or DeepSpeed hostfile")->required();
  import_command->add_option("--format", options->format, "ansible or deepspeed (default: told by the text)")
      ->check(CLI::IsMember({"ansible", "deepspeed"}));
  import_command->add_option("-o,--output", options->output, "write the YAML here (atomically) instead of stdout");
  import_command->add_option("--password-env", options->password_env,
                             "environment variable holding the SSH password of hosts without a key; a password in "
                             "the file is replaced by it, never copied");
  import_command->callback([&ctx, options] { import(ctx, *options); });
}

}  // namespace xft::cli
