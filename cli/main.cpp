// xftctl: one command from "a list of IP addresses" to "Qwen answering on
// every core". main() parses, dispatches to a command, and turns errors into
// a one-line message and an exit code.
#include <cstdio>
#include <exception>

#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "cli/usage_errors.h"

int main(int argc, char** argv) {
  using namespace xft::cli;
  CLI::App app{"xftctl: provision CPU clusters, check the fabric, and run tensor-parallel Qwen"};
  app.set_version_flag("--version", "xftctl 0.1.0");
  app.require_subcommand(1);
  app.fallthrough();

  Context ctx;
  app.add_option("-i,--inventory", ctx.inventory_flag,
                 "inventory file (else $XFTCTL_INVENTORY, else ./inventory.yaml)");
  app.add_flag("-v,--verbose", ctx.verbosity, "more log output (repeat for debug)");
  app.parse_complete_callback([&] {
    spdlog::set_level(ctx.verbosity >= 2   ? spdlog::level::debug
                      : ctx.verbosity == 1 ? spdlog::level::info
                                           : spdlog::level::warn);
  });

  add_inventory_commands(app, ctx);
  add_tokenize_commands(app, ctx);
  add_ping_commands(app, ctx);
  add_exec_commands(app, ctx);
  add_model_commands(app, ctx);
  add_bench_commands(app, ctx);
  add_topology_commands(app, ctx);
  add_run_commands(app, ctx);
  add_sync_commands(app, ctx);
  add_playbook_commands(app, ctx);
  add_check_commands(app, ctx);
  add_completion_commands(app, ctx);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "xftctl: %s\n", usage_error_line(app, e).c_str());
    return exit_usage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xftctl: %s\n", e.what());
    return exit_error;
  }
  return ctx.exit_code;
}
