// Allreduce algorithm names and the size-based selection string in oneCCL's
// syntax (CCL_ALLREDUCE="recursive_doubling:0-16384;ring:16385-max").
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"

namespace xft::engine::comm {

enum class Algorithm { mpi, ring, recursive_doubling, rabenseifner, direct, shm, hier };

const char* algorithm_name(Algorithm algo);
std::optional<Algorithm> parse_algorithm(const std::string& name);
// oneCCL's algorithm names that have no algorithm of that name here map to the
// closest one ("2d" -> hier); selections accept them. One note per such name in
// TEXT, saying what runs instead: "oneCCL's `2d` runs as `hier` (...)".
std::vector<std::string> oneccl_alias_notes(const std::string& text);
// Every algorithm, MPI's own first (it is the baseline the others are compared with).
const std::vector<Algorithm>& all_algorithms();

constexpr size_t kMaxBytes = std::numeric_limits<size_t>::max();

// One "algo:lo-hi" entry; sizes are message bytes, both ends inclusive.
struct SelectionRule {
  Algorithm algo;
  size_t lo = 0;
  size_t hi = kMaxBytes;
  bool operator==(const SelectionRule&) const = default;
};

class Selection {
 public:
  Selection() = default;
  explicit Selection(Algorithm algo) : rules_{{algo, 0, kMaxBytes}} {}
  explicit Selection(std::vector<SelectionRule> rules) : rules_(std::move(rules)) {}

  // "ring", "recursive_doubling:0-16384;ring:16385-max". As in oneCCL a later
  // entry wins where ranges overlap; sizes no entry covers use `mpi`.
  static Expected<Selection> parse(const std::string& text);

  Algorithm pick(size_t bytes) const;
  // Canonical text, parseable by parse(): adjacent ranges of one algorithm merged.
  std::string str() const;
  const std::vector<SelectionRule>& rules() const { return rules_; }
  // The algorithms the rules name, in first-use order.
  std::vector<Algorithm> algorithms() const;
  bool empty() const { return rules_.empty(); }

 private:
  std::vector<SelectionRule> rules_;
};

// Builds the selection a tune run measured: sizes[i] ascending, best[i] the
// fastest algorithm there; the switch between two measured sizes is put at
// their geometric middle.
Selection selection_from_measurements(const std::vector<size_t>& sizes,
                                      const std::vector<Algorithm>& best);

// "8", "4K", "64M", "1G", "16KiB", "2MB": binary multiples.
Expected<size_t> parse_byte_size(const std::string& text);
// 4096 -> "4K", 3000 -> "3000" (exact multiples only, for tables and messages).
std::string format_byte_size(size_t bytes);

}  // namespace xft::engine::comm
