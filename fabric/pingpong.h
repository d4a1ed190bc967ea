// One libfabric RDM ping-pong between two hosts, as `xftctl check fabric`
// runs it for every ordered pair: the client (the host the pair starts from)
// sends, the server answers. fi_getinfo -> fabric/domain/endpoint/AV/CQ ->
// fi_tsend/fi_trecv on the provider the inventory names. Every wait has a
// deadline, so a blocked pair fails in bounded time instead of hanging.
//
// Besides libfabric, the server listens on a plain TCP port and the client
// connects to it and to the peer's SSH port, so the report can say whether the
// path itself is blocked (firewall, security group) or only libfabric fails.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/expected.h"

namespace xft::fabric {

// Why a server stopped. port_in_use: one of its two ports was taken on this
// host, so the control node can run the pair again on other ports.
struct ServeError {
  std::string message;
  bool port_in_use = false;
};

struct PingPongOptions {
  std::string provider = "tcp;ofi_rxm";
  std::string local_address;  // this host's address on the fabric (the inventory's)
  std::string peer_address;   // client only
  int tcp_port = 0;           // the plain TCP port the server listens on
  int fabric_port = 0;        // the port the server's libfabric endpoint binds
  int ssh_port = 22;          // client only: the peer's SSH port
  std::vector<std::size_t> sizes{8, 1 << 20};
  int iterations = 200;       // for the smallest size; fewer for large ones (see iterations_for)
  std::chrono::milliseconds connect_timeout{3000};  // each of: TCP, SSH port, first libfabric message
  std::chrono::milliseconds run_timeout{20000};     // the whole measurement
  // Server only: called once both ports listen (the pair worker then says so
  // on stdout, which the control node reads when it cannot reach the port).
  std::function<void()> on_listening;
};

// Round trips for one size: enough to average, capped so one size moves at
// most 64 MiB each way.
int iterations_for(std::size_t size, int iterations);

struct SizeResult {
  std::size_t size = 0;
  int iterations = 0;
  double one_way_us = 0;      // half the mean round trip
  double bandwidth_gbps = 0;  // 2 * size / round trip, GB/s (10^9 bytes)
};

// What the client saw. A step that was not reached stays "not tried".
struct ProbeOutcome {
  bool ok = false;
  std::string detail;  // "connected in 0.4 ms", "timed out after 3 s", ...
};

// The libfabric this process loaded, as the library itself says: its release
// (fi_tostr of FI_TYPE_VERSION, "1.17.0"; fi_version()'s major.minor when that
// is empty) and its file (dladdr on fi_getinfo), so a report names what it
// measured, not what PATH or the probe suggested.
struct LoadedLibfabric {
  std::string version;
  std::string path;  // "/opt/amazon/efa/lib64/libfabric.so.1"
};
LoadedLibfabric loaded_libfabric();

struct PingPongReport {
  ProbeOutcome tcp;     // plain TCP to the server's port
  ProbeOutcome ssh;     // TCP to the peer's SSH port
  ProbeOutcome fabric;  // libfabric: first message answered, then every size
  std::vector<SizeResult> sizes;
  LoadedLibfabric libfabric;  // the client's
};

nlohmann::json report_to_json(const PingPongReport& report);
Expected<PingPongReport> report_from_json(const std::string& text);

// The server: listens on tcp_port (accepts and closes one connection) and on
// fabric_port with libfabric, answers one client's messages, and returns when
// the client is done, the control node says stop (stop_server), or the
// deadline (connect_timeout * 3 + 10 s + run_timeout) passes.
Expected<void, ServeError> serve_pingpong(const PingPongOptions& options);

// Tells a server still waiting for its client to give up (the client already
// failed to reach it), so a blocked pair costs the client's timeouts only.
void stop_server(const std::string& address, int tcp_port);

// The client: TCP, SSH port, then the libfabric exchange. Failures are in the
// report; an Error only for bad options.
Expected<PingPongReport> run_pingpong_client(const PingPongOptions& options);

// A plain TCP connect with a deadline: "connected in 0.3 ms" or why not.
ProbeOutcome probe_tcp(const std::string& address, int port, std::chrono::milliseconds timeout);

}  // namespace xft::fabric
