#include "playbooks/managed_block.h"

#include <sstream>

namespace xft::playbooks {

std::string begin_marker_line(const std::string& marker) { return "# BEGIN " + marker; }
std::string end_marker_line(const std::string& marker) { return "# END " + marker; }

namespace {

std::vector<std::string> split_lines_keep_newline(const std::string& content) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < content.size()) {
    size_t newline = content.find('\n', start);
    size_t end = newline == std::string::npos ? content.size() : newline + 1;
    lines.push_back(content.substr(start, end - start));
    start = end;
  }
  return lines;
}

std::string without_newline(const std::string& line) {
  if (!line.empty() && line.back() == '\n') return line.substr(0, line.size() - 1);
  return line;
}

}  // namespace

xft::Expected<std::string> replace_managed_block(const std::string& content, const std::string& marker,
                                                 const std::string& block_body) {
  const std::string begin = begin_marker_line(marker);
  const std::string end = end_marker_line(marker);
  const std::string block = begin + "\n" + block_body + end + "\n";
  std::vector<std::string> lines = split_lines_keep_newline(content);

  size_t begin_index = lines.size();
  size_t end_index = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line = without_newline(lines[i]);
    if (line == begin) {
      if (begin_index != lines.size())
        return xft::make_error("line " + std::to_string(i + 1) + ": second '" + begin +
                               "' block; remove one of the duplicated blocks by hand");
      begin_index = i;
    } else if (line == end && begin_index != lines.size() && end_index == lines.size()) {
      end_index = i;
    }
  }
  if (begin_index != lines.size() && end_index == lines.size())
    return xft::make_error("line " + std::to_string(begin_index + 1) + ": '" + begin + "' has no '" + end +
                           "' line; add it or remove the BEGIN line");

  std::string result;
  if (begin_index == lines.size()) {
    result = content;
    if (!result.empty() && result.back() != '\n') result += '\n';
    return result + block;
  }
  for (size_t i = 0; i < begin_index; ++i) result += lines[i];
  result += block;
  for (size_t i = end_index + 1; i < lines.size(); ++i) result += lines[i];
  return result;
}

std::string render_hosts_block_body(const std::vector<HostEntry>& hosts) {
  std::string body;
  for (const HostEntry& host : hosts) body += host.address + " " + host.name + "\n";
  return body;
}

}  // namespace xft::playbooks
