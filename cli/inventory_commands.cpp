#include "cli/command.h"

namespace xft::cli {

void add_inventory_commands(CLI::App& app, Context& ctx) {}

}  // namespace xft::cli
