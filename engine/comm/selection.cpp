#include "engine/comm/selection.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace xft::engine::comm {

namespace {

struct NamedAlgorithm {
  Algorithm algo;
  const char* name;
};

constexpr NamedAlgorithm kAlgorithms[] = {
    {Algorithm::mpi, "mpi"},
    {Algorithm::ring, "ring"},
    {Algorithm::recursive_doubling, "recursive_doubling"},
    {Algorithm::rabenseifner, "rabenseifner"},
    {Algorithm::direct, "direct"},
    {Algorithm::shm, "shm"},
    {Algorithm::hier, "hier"},
};

// oneCCL's allreduce algorithms (CCL_ALLREDUCE) this project has no algorithm
// of the same name for, each with its closest one and why.
struct OnecclAlias {
  const char* name;
  Algorithm algo;
  const char* why;
};

constexpr OnecclAlias kOnecclAliases[] = {
    {"2d", Algorithm::hier, "reduce inside each host, then across hosts"},
    {"topo", Algorithm::hier, "topology-aware: inside each host, then across hosts"},
    {"nreduce", Algorithm::rabenseifner, "reduce-scatter then allgather"},
    {"double_tree", Algorithm::recursive_doubling, "logarithmic steps for small messages"},
    {"starlike", Algorithm::direct, "every rank exchanges with every other"},
    {"ring_rma", Algorithm::ring, "the same ring without one-sided writes"},
};

const OnecclAlias* find_alias(const std::string& name) {
  for (const auto& alias : kOnecclAliases)
    if (name == alias.name) return &alias;
  return nullptr;
}

std::optional<Algorithm> parse_algorithm_or_alias(const std::string& name) {
  if (auto algo = parse_algorithm(name)) return algo;
  if (const OnecclAlias* alias = find_alias(name)) return alias->algo;
  return std::nullopt;
}

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

std::string known_names() {
  std::string out;
  for (const auto& entry : kAlgorithms) out += (out.empty() ? "" : ", ") + std::string(entry.name);
  return out;
}

Expected<size_t> parse_bound(const std::string& text, const std::string& entry) {
  if (text == "max") return kMaxBytes;
  auto bytes = parse_byte_size(text);
  if (!bytes) return make_error("in '" + entry + "': " + bytes.error().message);
  return *bytes;
}

}  // namespace

const char* algorithm_name(Algorithm algo) {
  for (const auto& entry : kAlgorithms)
    if (entry.algo == algo) return entry.name;
  return "?";
}

std::optional<Algorithm> parse_algorithm(const std::string& name) {
  for (const auto& entry : kAlgorithms)
    if (name == entry.name) return entry.algo;
  return std::nullopt;
}

const std::vector<Algorithm>& all_algorithms() {
  static const std::vector<Algorithm> all = [] {
    std::vector<Algorithm> out;
    for (const auto& entry : kAlgorithms) out.push_back(entry.algo);
    return out;
  }();
  return all;
}

Expected<size_t> parse_byte_size(const std::string& raw) {
  std::string text = trim(raw);
  size_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data())
    return make_error("'" + raw + "' is not a byte size (use e.g. 8, 4K, 64M, 1G)");
  std::string suffix = text.substr(size_t(end - text.data()));
  size_t multiplier = 1;
  if (suffix.empty() || suffix == "B") {
    multiplier = 1;
  } else {
    char unit = suffix[0];
    std::string rest = suffix.substr(1);
    if (!(rest.empty() || rest == "B" || rest == "iB"))
      return make_error("'" + raw + "' has an unknown unit (use K, M or G)");
    if (unit == 'K' || unit == 'k') multiplier = size_t(1) << 10;
    else if (unit == 'M' || unit == 'm') multiplier = size_t(1) << 20;
    else if (unit == 'G' || unit == 'g') multiplier = size_t(1) << 30;
    else return make_error("'" + raw + "' has an unknown unit (use K, M or G)");
  }
  if (value > kMaxBytes / multiplier) return make_error("'" + raw + "' is too large");
  return value * multiplier;
}

std::string format_byte_size(size_t bytes) {
  if (bytes >= (size_t(1) << 30) && bytes % (size_t(1) << 30) == 0)
    return std::to_string(bytes >> 30) + "G";
  if (bytes >= (size_t(1) << 20) && bytes % (size_t(1) << 20) == 0)
    return std::to_string(bytes >> 20) + "M";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

Expected<Selection> Selection::parse(const std::string& text) {
  std::vector<SelectionRule> rules;
  size_t start = 0;
  while (start <= text.size()) {
    size_t semi = text.find(';', start);
    std::string entry = trim(text.substr(start, semi == std::string::npos ? std::string::npos : semi - start));
    start = semi == std::string::npos ? text.size() + 1 : semi + 1;
    if (entry.empty()) continue;
    size_t colon = entry.find(':');
    std::string name = trim(entry.substr(0, colon));
    auto algo = parse_algorithm_or_alias(name);
    if (!algo)
      return make_error("unknown allreduce algorithm '" + name + "' in '" + text +
                        "' (known: " + known_names() + ")");
    SelectionRule rule{*algo, 0, kMaxBytes};
    if (colon != std::string::npos) {
      std::string range = trim(entry.substr(colon + 1));
      size_t dash = range.find('-');
      if (dash == std::string::npos)
        return make_error("size range '" + range + "' in '" + entry + "' needs the form LO-HI (e.g. 0-16384 or 16385-max)");
      auto lo = parse_bound(trim(range.substr(0, dash)), entry);
      if (!lo) return lo.error();
      auto hi = parse_bound(trim(range.substr(dash + 1)), entry);
      if (!hi) return hi.error();
      if (*lo > *hi) return make_error("size range '" + range + "' in '" + entry + "' is empty (LO > HI)");
      rule.lo = *lo;
      rule.hi = *hi;
    }
    rules.push_back(rule);
  }
  if (rules.empty()) return make_error("empty allreduce selection '" + text + "'");
  return Selection(std::move(rules));
}

std::vector<std::string> oneccl_alias_notes(const std::string& text) {
  std::vector<std::string> notes;
  std::vector<std::string> seen;
  size_t start = 0;
  while (start < text.size()) {
    size_t semi = text.find(';', start);
    std::string entry = text.substr(start, semi == std::string::npos ? std::string::npos : semi - start);
    start = semi == std::string::npos ? text.size() : semi + 1;
    std::string name = trim(entry.substr(0, entry.find(':')));
    const OnecclAlias* alias = find_alias(name);
    if (!alias || std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    seen.push_back(name);
    notes.push_back("oneCCL's `" + name + "` runs as `" + algorithm_name(alias->algo) + "` (" + alias->why + ")");
  }
  return notes;
}

Algorithm Selection::pick(size_t bytes) const {
  for (auto it = rules_.rbegin(); it != rules_.rend(); ++it)
    if (bytes >= it->lo && bytes <= it->hi) return it->algo;
  return Algorithm::mpi;
}

std::vector<Algorithm> Selection::algorithms() const {
  std::vector<Algorithm> out;
  for (const auto& rule : rules_) {
    bool seen = false;
    for (auto a : out) seen = seen || a == rule.algo;
    if (!seen) out.push_back(rule.algo);
  }
  return out;
}

std::string Selection::str() const {
  // Walk the byte axis through the rule boundaries, emitting the effective
  // algorithm of each piece, so overlaps and gaps come out resolved.
  std::vector<size_t> cuts{0};
  for (const auto& rule : rules_) {
    cuts.push_back(rule.lo);
    if (rule.hi != kMaxBytes) cuts.push_back(rule.hi + 1);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<SelectionRule> pieces;
  for (size_t i = 0; i < cuts.size(); ++i) {
    size_t lo = cuts[i];
    size_t hi = i + 1 < cuts.size() ? cuts[i + 1] - 1 : kMaxBytes;
    Algorithm algo = pick(lo);
    if (!pieces.empty() && pieces.back().algo == algo) pieces.back().hi = hi;
    else pieces.push_back({algo, lo, hi});
  }
  std::string out;
  for (const auto& piece : pieces) {
    if (!out.empty()) out += ';';
    out += std::string(algorithm_name(piece.algo)) + ":" + std::to_string(piece.lo) + "-" +
           (piece.hi == kMaxBytes ? "max" : std::to_string(piece.hi));
  }
  return out;
}

Selection selection_from_measurements(const std::vector<size_t>& sizes,
                                      const std::vector<Algorithm>& best) {
  std::vector<SelectionRule> rules;
  for (size_t i = 0; i < sizes.size() && i < best.size(); ++i) {
    size_t lo = i == 0 ? 0 : rules.back().hi + 1;
    size_t hi = kMaxBytes;
    if (i + 1 < sizes.size())
      hi = std::max(sizes[i], size_t(std::sqrt(double(sizes[i]) * double(sizes[i + 1]))));
    if (!rules.empty() && rules.back().algo == best[i]) rules.back().hi = hi;
    else rules.push_back({best[i], lo, hi});
  }
  return Selection(std::move(rules));
}

}  // namespace xft::engine::comm
