// xftctl: one command from "a list of IP addresses" to "Qwen answering on
// every core". main() parses, dispatches to a command, and turns errors into
// a one-line message and an exit code.
#include <cstdio>
#include <exception>

#include <cstdlib>
#include <string>

#include "cli/command.h"
#include "cli/help_format.h"
#include "cli/usage_errors.h"
#include "common/log.h"

namespace {

struct LogFlags {
  std::string level;  // overrides -v/-q when given
  std::string format = "text";
  std::string timestamps = "auto";
};

void add_log_flags(CLI::App& app, xft::cli::Context& ctx, LogFlags& flags) {
  app.add_flag("-v,--verbose", ctx.verbosity, "more log output: -v debug, -vv trace");
  app.add_flag("-q,--quiet", ctx.quiet, "errors only: no notices, warnings or progress");
  app.add_option("--log-level", flags.level, "error, warning, info, debug or trace (instead of -q/-v)")
      ->envname("XFTCTL_LOG_LEVEL")
      ->check(CLI::IsMember({"error", "warning", "info", "debug", "trace"}));
  app.add_option("--log-format", flags.format, "text or json (one object a line: ts, level, msg, host...)")
      ->envname("XFTCTL_LOG_FORMAT")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--log-timestamps", flags.timestamps,
                 "auto (when stderr is no terminal and not the journal), on or off")
      ->envname("XFTCTL_LOG_TIMESTAMPS")
      ->check(CLI::IsMember({"auto", "on", "off"}));
}

// Installs the logger the flags ask for. Ranks started by mpirun inherit the
// level and format through the environment (mpirun_for forwards them to
// other hosts); they leave timestamps to the control node that relays their lines.
void apply_log_flags(xft::cli::Context& ctx, const LogFlags& flags) {
  namespace log = xft::log;
  log::Level level = flags.level.empty() ? log::level_for(ctx.verbosity, ctx.quiet) : *log::parse_level(flags.level);
  if (level > log::Level::info) ctx.quiet = true;
  log::Format format = *log::parse_format(flags.format);
  log::setup(level, format, *log::resolve_timestamps(flags.timestamps));
  if (level != log::Level::info) setenv("XFTCTL_LOG_LEVEL", std::string(log::level_name(level)).c_str(), 1);
  if (format == log::Format::json) setenv("XFTCTL_LOG_FORMAT", "json", 1);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xft::cli;
  xft::log::setup(xft::log::Level::info, xft::log::Format::text, *xft::log::resolve_timestamps("auto"));
  CLI::App app{"xftctl: provision CPU clusters, check the fabric, and run tensor-parallel Qwen"};
  // Before any subcommand exists: each takes its parent's formatter.
  app.formatter(std::make_shared<WrappingFormatter>());
  app.set_version_flag("--version", "xftctl 0.1.0");
  app.require_subcommand(1);
  app.fallthrough();

  Context ctx;
  app.add_option("-i,--inventory", ctx.inventory_flag,
                 "inventory file (else $XFTCTL_INVENTORY, else ./inventory.yaml)");
  LogFlags log_flags;
  add_log_flags(app, ctx, log_flags);
  app.parse_complete_callback([&] { apply_log_flags(ctx, log_flags); });

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
    xft::log::error(e.what());
    return exit_error;
  }
  return ctx.exit_code;
}
