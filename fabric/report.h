// The human report of `xftctl check fabric`, made to read at cluster scale
// the way clush -b does: only the problems, each once for every host (or pair)
// that has it, the subjects folded as ClusterShell nodesets (`node[01-64]`);
// then one summary line; then the two matrices, which past 16 hosts (or when
// the full matrix would not fit the width) become one row per host. Pure
// functions: the checks and matrices in, text out.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "fabric/checks.h"

namespace xft::fabric {

constexpr std::size_t kFabricReportWidth = 100;
constexpr std::size_t kFullMatrixHosts = 16;

// Checks that are the same problem on several subjects: the check, verdict,
// and observed and fix texts equal once each subject's own names are taken
// out of them.
struct ProblemGroup {
  std::string check;
  Verdict verdict = Verdict::warn;
  std::vector<std::string> hosts;  // host checks, or
  std::vector<std::pair<std::string, std::string>> pairs;  // pair checks (from, to)
  std::string observed;  // with the subjects' names folded back in
  std::string fix;
};

// The WARN and FAIL checks grouped, host checks first, in the order of their
// first occurrence.
std::vector<ProblemGroup> group_problems(const std::vector<Check>& checks);

// "h01 -> h[02-04]", "h[01-04] (every pair)", "h01 -> h02; h03 -> h04".
std::string fold_pairs(const std::vector<std::pair<std::string, std::string>>& pairs);

// `names` as nodesets cut into lines of at most `width` columns; every line
// but the last ends with ',' so the lines joined give the whole set back.
std::vector<std::string> fold_host_lines(const std::vector<std::string>& names, std::size_t width);

// The problems, one row each ("SUBJECT  CHECK  VERDICT  OBSERVED") and its
// fix line under it; a subject too long for its column gets lines of its own
// above the row. Empty when there is no problem.
std::string format_problems(const std::vector<Check>& checks, std::size_t width = kFabricReportWidth);

// "24 hosts, 552 pairs: 1200 PASS, 2 WARN, 1 FAIL" (pairs: those that ran).
std::string summary_line(const std::vector<Check>& checks, std::size_t hosts, std::size_t pairs);

// Each host's libfabric as its pair worker (the client) loaded it, hosts in
// inventory order; hosts whose workers never ran are left out.
using LoadedByHost = std::vector<std::pair<std::string, LoadedLibfabric>>;

// What the pairs measured with, under the summary: one line when every one of
// `hosts` loaded the same file ("libfabric measured: 1.17.0 (/usr/lib/...)"),
// else a line per file naming its hosts as nodesets ("... on h[01,03-04]"),
// the set folding onto indented lines to stay within `width`. Empty: none.
std::string format_measured_libfabric(const LoadedByHost& loaded, std::size_t hosts,
                                      std::size_t width = kFabricReportWidth);

// Each measured host's "libfabric" row says what its worker loaded
// ("1.17.0 (/opt/amazon/efa/lib64/libfabric.so.1)") in place of the probe's word.
void note_measured_libfabric(std::vector<Check>& checks, const LoadedByHost& loaded);

// The full matrix (format_matrix) up to kFullMatrixHosts hosts when it fits
// `width`; else one row per host: min, median and max over the other hosts and
// the worst of them (or the peers without a figure).
std::string format_matrix_for_width(const PairMatrix& matrix, int decimals, std::size_t width = kFabricReportWidth);
std::string format_matrix_per_host(const PairMatrix& matrix, int decimals);

}  // namespace xft::fabric
