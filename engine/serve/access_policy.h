// Which browsers may talk to the server. A web page can make a browser send
// requests to any address, the user's own loopback included; two rules keep
// such pages out. Host: without an API key only loopback names (or names the
// operator lists) are served, so a page on a hostile name that resolves to
// this machine (DNS rebinding) gets 403. Origin: a request that a page of
// another origin made (its Origin is not this server's) gets 403 unless the
// operator allowed that origin for CORS. Pure functions, unit-tested.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace xft::engine::serve {

struct AccessPolicy {
  bool any_host = false;                   // an API key guards /v1: a rebound name gains nothing
  std::vector<std::string> allowed_hosts;  // --allowed-hosts: names or addresses besides loopback
  std::vector<std::string> cors_origins;   // --cors-origin: e.g. "https://app.example.com"
};

// The name in a Host header, lowercased and without the port ("[::1]:8000"
// -> "[::1]"); empty when the header is malformed.
std::string host_name(std::string_view host_header);

// An empty Host (HTTP/1.0 without one; no browser sends that) is allowed.
bool host_allowed(const AccessPolicy& policy, std::string_view host_header);

enum class OriginCheck {
  none,     // no Origin header: not a cross-origin browser request
  same,     // the page came from this server
  allowed,  // another origin that --cors-origin lists: answer with CORS headers
  refused,
};
OriginCheck check_origin(const AccessPolicy& policy, std::string_view origin, std::string_view host_header);

// The headers an allowed cross-origin answer carries, and those of a preflight (OPTIONS).
std::map<std::string, std::string> cors_headers(std::string_view origin);
std::map<std::string, std::string> preflight_headers(std::string_view origin);

// "a, b,c" -> {"a", "b", "c"} (empty items dropped).
std::vector<std::string> split_list(std::string_view text);

}  // namespace xft::engine::serve
