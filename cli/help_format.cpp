#include "cli/help_format.h"

#include <sstream>

namespace xft::cli {
namespace {

// Where the description starts: after the first run of two or more spaces
// that follows text ("  -q,--quiet    errors only"); npos for prose.
size_t description_column(const std::string& line) {
  size_t text = line.find_first_not_of(' ');
  if (text == std::string::npos) return std::string::npos;
  size_t gap = line.find("  ", text);
  if (gap == std::string::npos) return std::string::npos;
  return line.find_first_not_of(' ', gap);
}

void wrap_line(std::string line, size_t width, std::string& out) {
  size_t indent = description_column(line);
  size_t lead = line.find_first_not_of(' ');
  if (lead == std::string::npos) lead = 0;
  // Prose continues at its own indent; so does a description column too far
  // right to leave room.
  if (indent == std::string::npos || indent + 30 > width) indent = lead;
  // Never break inside the option names: the first break is at or after the description.
  size_t floor = description_column(line) == std::string::npos ? lead : std::min(indent, line.size());
  while (line.size() > width) {
    size_t cut = line.rfind(' ', width);
    if (cut == std::string::npos || cut <= floor) cut = line.find(' ', width);  // one word longer than the room
    if (cut == std::string::npos) break;
    size_t end = line.find_last_not_of(' ', cut);
    out += line.substr(0, end + 1) + "\n";
    size_t next = line.find_first_not_of(' ', cut);
    if (next == std::string::npos) return;
    line = std::string(indent, ' ') + line.substr(next);
    floor = indent;
  }
  out += line + "\n";
}

}  // namespace

std::string wrap_help(const std::string& text, size_t width) {
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) wrap_line(line, width, out);
  if (!text.empty() && text.back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

}  // namespace xft::cli
