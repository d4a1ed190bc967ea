#include "engine/serve/access_policy.h"

#include <algorithm>
#include <cctype>

namespace xft::engine::serve {

namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool name_char(unsigned char c) { return std::isalnum(c) || c == '-' || c == '.' || c == '_'; }

// "scheme://authority" with http's and https's default ports dropped; empty when malformed.
std::string normalized_origin(std::string_view origin) {
  const std::string text = lowercase(origin);
  std::string_view scheme;
  if (text.rfind("http://", 0) == 0) scheme = "http";
  else if (text.rfind("https://", 0) == 0) scheme = "https";
  else return "";
  std::string authority = text.substr(scheme.size() + 3);
  if (host_name(authority).empty()) return "";
  const std::string default_port = scheme == "http" ? ":80" : ":443";
  if (authority.size() > default_port.size() &&
      authority.compare(authority.size() - default_port.size(), default_port.size(), default_port) == 0) {
    authority.resize(authority.size() - default_port.size());
  }
  return std::string(scheme) + "://" + authority;
}

}  // namespace

std::string host_name(std::string_view host_header) {
  std::string_view name = host_header;
  std::string_view port;
  if (!name.empty() && name.front() == '[') {  // IPv6 literal
    const size_t close = name.find(']');
    if (close == std::string_view::npos) return "";
    port = name.substr(close + 1);
    name = name.substr(0, close + 1);
    if (name.size() < 3 || !std::all_of(name.begin() + 1, name.end() - 1, [](unsigned char c) {
          return std::isxdigit(c) || c == ':' || c == '.';
        })) {
      return "";
    }
  } else {
    const size_t colon = name.find(':');
    if (colon != std::string_view::npos) {
      port = name.substr(colon);
      name = name.substr(0, colon);
    }
    if (name.empty() || !std::all_of(name.begin(), name.end(), name_char)) return "";
  }
  if (!port.empty() && (port.front() != ':' || !digits(port.substr(1)))) return "";
  return lowercase(name);
}

bool host_allowed(const AccessPolicy& policy, std::string_view host_header) {
  if (policy.any_host || host_header.empty()) return true;
  const std::string name = host_name(host_header);
  if (name.empty()) return false;
  if (name == "localhost" || name == "127.0.0.1" || name == "[::1]") return true;
  return std::any_of(policy.allowed_hosts.begin(), policy.allowed_hosts.end(),
                     [&name](const std::string& allowed) { return host_name(allowed) == name; });
}

OriginCheck check_origin(const AccessPolicy& policy, std::string_view origin, std::string_view host_header) {
  if (origin.empty()) return OriginCheck::none;
  const std::string normalized = normalized_origin(origin);
  if (normalized.empty()) return OriginCheck::refused;  // "null" (sandboxed frames, file://) included
  for (const std::string& allowed : policy.cors_origins) {
    if (normalized_origin(allowed) == normalized) return OriginCheck::allowed;
  }
  // Behind a TLS proxy the page is https:// while this server sees plain HTTP.
  const std::string host = lowercase(host_header);
  if (!host.empty() && (normalized == normalized_origin("http://" + host) ||
                        normalized == normalized_origin("https://" + host))) {
    return OriginCheck::same;
  }
  return OriginCheck::refused;
}

std::map<std::string, std::string> cors_headers(std::string_view origin) {
  return {{"Access-Control-Allow-Origin", std::string(origin)}, {"Vary", "Origin"}};
}

std::map<std::string, std::string> preflight_headers(std::string_view origin) {
  auto headers = cors_headers(origin);
  headers["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS";
  headers["Access-Control-Allow-Headers"] = "Authorization, Content-Type";
  headers["Access-Control-Max-Age"] = "600";
  return headers;
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.remove_suffix(1);
    if (!item.empty()) items.emplace_back(item);
    start = comma + 1;
  }
  return items;
}

}  // namespace xft::engine::serve
