// The rules of `xftctl check fabric`: facts of a host (or a pair's ping-pong
// report) in, a list of checks out, each PASS/WARN/FAIL with what was
// observed and, for every WARN and FAIL, the one line that fixes it. Pure
// functions: no I/O, so every rule is unit tested on recorded facts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fabric/facts.h"
#include "fabric/pingpong.h"

namespace xft::fabric {

enum class Verdict { pass, warn, fail };
const char* verdict_name(Verdict verdict);  // "PASS", "WARN", "FAIL"

struct Check {
  std::string host;  // a host check, or
  std::string pair;  // a pair check: "h01 -> h02" (h01 started the traffic)
  std::string check;
  Verdict verdict = Verdict::pass;
  std::string observed;
  std::string fix;  // empty for PASS
};

// What the inventory and the rank plan expect of a host.
struct HostExpectation {
  std::string host;
  std::string provider = "tcp;ofi_rxm";
  std::string iface;    // empty: not named in the inventory
  std::string address;  // the inventory's address
  std::vector<int> rank_numa_nodes;  // NUMA nodes the plan's ranks use; empty: no plan
  std::optional<double> clock_offset_s;  // this host's clock minus the control node's
};

// "verbs;ofi_rxm", "efa" and "psm3" need an RDMA device, registered memory
// (memlock) and the vendor's pieces; "tcp;ofi_rxm" and "shm" need none.
bool is_rdma_provider(const std::string& provider);

std::vector<Check> host_checks(const FabricFacts& facts, const HostExpectation& expect);
// A host that could not be probed: one FAIL naming why.
Check unreachable_host_check(const std::string& host, const std::string& why);

// tcp, ssh and libfabric rows for traffic from `from` to `to`.
std::vector<Check> pair_checks(const std::string& from, const std::string& to, const std::string& provider,
                               const PingPongReport& report);

// Every ordered pair (from, to) of n hosts, in rounds where no host is in two
// pairs (the circle method, then the same rounds reversed): 2(n-1) rounds for
// even n, 2n for odd n. Pairs of one round can run at once without sharing a host.
std::vector<std::vector<std::pair<std::size_t, std::size_t>>> pair_rounds(std::size_t n);

// A square matrix of one figure per ordered pair (row: from, column: to);
// empty cells (the diagonal, failed pairs) are nullopt.
struct PairMatrix {
  std::string title;  // "latency, 8 B, one way (us)"
  std::vector<std::string> hosts;
  std::vector<std::vector<std::optional<double>>> values;
  bool higher_is_better = false;
  // Cells far off the median: latency above 2x it, bandwidth below half.
  std::vector<std::vector<bool>> flagged;
  double median = 0;
};
void flag_outliers(PairMatrix& matrix);
// WARN rows for the flagged cells of a matrix.
std::vector<Check> outlier_checks(const PairMatrix& matrix, const std::string& check, const std::string& unit);

std::string format_matrix(const PairMatrix& matrix, int decimals);
nlohmann::ordered_json matrix_to_json(const PairMatrix& matrix);
nlohmann::ordered_json check_to_json(const Check& check);

}  // namespace xft::fabric
