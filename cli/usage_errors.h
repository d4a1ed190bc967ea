// Command-line mistakes become one line that says what was wrong and what to
// type instead ("did you mean", the `--` before a remote command), and one
// exit code, whatever part of CLI11 noticed them.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace xft::cli {

// The one line for a parse error of `app` (without the "xftctl: " prefix).
std::string usage_error_line(const CLI::App& app, const CLI::ParseError& error);

}  // namespace xft::cli
