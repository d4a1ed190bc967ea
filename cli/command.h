// What every command file shares: the global options and the exit code the
// command leaves for main() to return.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace xft::cli {

// Exit codes shared by ping, exec, playbook runs and setup.
enum ExitCode : int {
  exit_ok = 0,
  exit_error = 1,        // bad input or a failed local step
  exit_host_failed = 2,  // some host failed a command or task
  exit_unreachable = 4,  // some host could not be reached
  exit_usage = 5,        // the command line is wrong (as Ansible's 5)
};

struct Context {
  std::string inventory_flag;  // -i FILE; empty when not given
  int exit_code = exit_ok;
  int verbosity = 0;  // -v, -vv
  bool quiet = false;  // -q: errors only, no progress
};

// Each command file registers its subcommands here; main() calls them in order.
void add_inventory_commands(CLI::App& app, Context& ctx);
void add_tokenize_commands(CLI::App& app, Context& ctx);
void add_ping_commands(CLI::App& app, Context& ctx);
void add_exec_commands(CLI::App& app, Context& ctx);
void add_model_commands(CLI::App& app, Context& ctx);
void add_bench_commands(CLI::App& app, Context& ctx);
void add_topology_commands(CLI::App& app, Context& ctx);
void add_run_commands(CLI::App& app, Context& ctx);
void add_sync_commands(CLI::App& app, Context& ctx);
void add_playbook_commands(CLI::App& app, Context& ctx);
void add_check_commands(CLI::App& app, Context& ctx);
void add_completion_commands(CLI::App& app, Context& ctx);

}  // namespace xft::cli
