#include "inventory/show.h"

#include <algorithm>

namespace xft::inventory {

std::string auth_label(const Credentials& credentials) {
  if (!credentials.key.empty()) return "key:" + credentials.key;
  if (!credentials.password_env.empty()) return "env:" + credentials.password_env;
  if (credentials.password_prompt) return "prompt";
  return "auto";
}

std::string ranks_label(const Ranks& ranks) {
  switch (ranks.kind) {
    case RanksKind::per_socket: return "per-socket";
    case RanksKind::per_numa: return "per-numa";
    default: return std::to_string(ranks.count);
  }
}

std::string format_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows) {
  auto cell = [](const std::vector<std::string>& row, size_t column) {
    return column < row.size() && !row[column].empty() ? row[column] : std::string("-");
  };
  std::vector<size_t> widths(header.size());
  for (size_t column = 0; column < header.size(); ++column) {
    widths[column] = header[column].size();
    for (const auto& row : rows) widths[column] = std::max(widths[column], cell(row, column).size());
  }
  auto format_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t column = 0; column < header.size(); ++column) {
      std::string text = cell(row, column);
      if (column + 1 < header.size()) text.resize(widths[column] + 2, ' ');
      line += text;
    }
    return line + "\n";
  };
  std::string out = format_row(header);
  for (const auto& row : rows) out += format_row(row);
  return out;
}

std::string format_hosts_table(const Inventory& inventory) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& host : inventory.hosts) {
    rows.push_back({host.name, host.address, host.user, std::to_string(host.port), ranks_label(host.ranks),
                    host.fabric.provider, host.fabric.iface, host.shared, auth_label(host.credentials)});
  }
  return format_table({"NAME", "ADDRESS", "USER", "PORT", "RANKS", "PROVIDER", "IFACE", "SHARED", "AUTH"}, rows);
}

}  // namespace xft::inventory
