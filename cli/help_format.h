// Help text that fits an 80-column terminal: CLI11 2.1 pads options to a
// column and never wraps, so long descriptions ran to 250 columns.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

namespace xft::cli {

constexpr size_t kHelpWidth = 80;

// Each line longer than WIDTH broken at spaces; continuation lines start at the
// line's description column (after the option names), else at its own indent.
std::string wrap_help(const std::string& text, size_t width = kHelpWidth);

class WrappingFormatter : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    return wrap_help(CLI::Formatter::make_help(app, std::move(name), mode));
  }
};

}  // namespace xft::cli
