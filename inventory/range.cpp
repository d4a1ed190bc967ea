// ClusterShell-style host ranges: expansion of "node[01-04,07]" and the
// inverse folding used to print many host names on one line.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include "inventory/load.h"

namespace xft::inventory {
namespace {

// A range bigger than any real cluster is almost certainly a typo
// ("node[1-100000]") and would only exhaust memory.
constexpr size_t max_expanded_hosts = 100000;

bool is_decimal_number(const std::string& text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string pad(long value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// A leading zero fixes the width ("01" -> 2); a plain number is unpadded.
size_t width_of(const std::string& digits) {
  return digits.size() > 1 && digits[0] == '0' ? digits.size() : 0;
}

Error range_error(const std::string& pattern, const std::string& what) {
  return make_error("bad range `" + pattern + "`: " + what);
}

// One bracket body "01-04,07,10-20/5" -> its values, each already padded.
Expected<std::vector<std::string>> expand_bracket(const std::string& pattern,
                                                  const std::string& body) {
  std::vector<std::string> values;
  if (body.empty()) return range_error(pattern, "empty brackets (write e.g. node[1-4])");
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    if (comma == std::string::npos) comma = body.size();
    std::string item = body.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) return range_error(pattern, "empty item between commas");
    std::string step_text = "1";
    if (auto slash = item.find('/'); slash != std::string::npos) {
      step_text = item.substr(slash + 1);
      item = item.substr(0, slash);
    }
    auto dash = item.find('-');
    std::string low = item.substr(0, dash);
    std::string high = dash == std::string::npos ? low : item.substr(dash + 1);
    if (!is_decimal_number(low) || !is_decimal_number(high) || !is_decimal_number(step_text))
      return range_error(pattern, "`" + item + "` is not a number or a range like 01-04");
    if (low.size() > 9 || high.size() > 9)
      return range_error(pattern, "`" + item + "` has too many digits");
    long first = std::stol(low), last = std::stol(high), step = std::stol(step_text);
    if (step < 1) return range_error(pattern, "step must be at least 1");
    if (first > last)
      return range_error(pattern, low + " > " + high + " (write the lower bound first: " + high + "-" +
                                      low + ")");
    if (static_cast<size_t>((last - first) / step) + values.size() >= max_expanded_hosts)
      return range_error(pattern, "expands to more than " + std::to_string(max_expanded_hosts) + " names");
    size_t width = width_of(low);
    for (long value = first; value <= last; value += step) values.push_back(pad(value, width));
    if (comma == body.size()) break;
  }
  return values;
}

}  // namespace

Expected<std::vector<std::string>> expand_range(const std::string& pattern) {
  std::vector<std::string> names{""};
  size_t pos = 0;
  while (pos < pattern.size()) {
    size_t open = pattern.find('[', pos);
    size_t stray_close = pattern.find(']', pos);
    if (stray_close != std::string::npos && stray_close < open)
      return range_error(pattern, "`]` without `[` at position " + std::to_string(stray_close + 1));
    std::string literal = pattern.substr(pos, open == std::string::npos ? std::string::npos : open - pos);
    for (auto& name : names) name += literal;
    if (open == std::string::npos) break;
    size_t close = pattern.find(']', open);
    if (close == std::string::npos)
      return range_error(pattern, "`[` at position " + std::to_string(open + 1) + " is never closed");
    std::string body = pattern.substr(open + 1, close - open - 1);
    if (body.find('[') != std::string::npos) return range_error(pattern, "nested `[`");
    auto values = expand_bracket(pattern, body);
    if (!values) return values.error();
    if (names.size() * values->size() > max_expanded_hosts)
      return range_error(pattern, "expands to more than " + std::to_string(max_expanded_hosts) + " names");
    std::vector<std::string> product;
    product.reserve(names.size() * values->size());
    for (const auto& name : names)
      for (const auto& value : *values) product.push_back(name + value);
    names = std::move(product);
    pos = close + 1;
  }
  return names;
}

namespace {

// A name split around its last run of digits: "node07-ib" -> {"node", "07", "-ib"}.
struct SplitName {
  std::string prefix;
  std::string digits;  // empty when the name has no digit
  std::string suffix;
};

SplitName split_last_number(const std::string& name) {
  size_t end = name.size();
  while (end > 0 && !std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
  if (end == 0) return {name, "", ""};
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1]))) --begin;
  return {name.substr(0, begin), name.substr(begin, end - begin), name.substr(end)};
}

// Numbers of one prefix/suffix pair folded into "01-03,07". A run continues
// only while the next number prints the same at the run's padding, so
// "1,2" and "001,002" stay separate runs and expand back to what they were.
std::string fold_numbers(std::vector<std::string> digits) {
  auto key = [](const std::string& d) { return std::make_tuple(std::stoull(d), d.size(), d); };
  std::sort(digits.begin(), digits.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  digits.erase(std::unique(digits.begin(), digits.end()), digits.end());
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < digits.size(); ++i) index_of[digits[i]] = i;
  std::vector<bool> used(digits.size(), false);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (used[i]) continue;
    used[i] = true;
    size_t width = width_of(digits[i]);
    unsigned long long value = std::stoull(digits[i]);
    std::string last = digits[i];
    for (;;) {
      auto next = index_of.find(pad(static_cast<long>(value + 1), width));
      if (next == index_of.end() || used[next->second]) break;
      used[next->second] = true;
      last = next->first;
      ++value;
    }
    out += (out.empty() ? "" : ",") + digits[i] + (last != digits[i] ? "-" + last : "");
  }
  return out;
}

}  // namespace

std::string fold_names(const std::vector<std::string>& names) {
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> numbered;
  std::set<std::string> plain;
  for (const auto& name : names) {
    auto split = split_last_number(name);
    if (split.digits.empty() || split.digits.size() > 18)
      plain.insert(name);
    else
      numbered[{split.prefix, split.suffix}].push_back(split.digits);
  }
  // ClusterShell prints folded sets sorted by their text.
  std::vector<std::string> parts(plain.begin(), plain.end());
  for (auto& [affix, digits] : numbered) {
    std::string folded = fold_numbers(digits);
    bool single = folded.find_first_of(",-") == std::string::npos;
    parts.push_back(affix.first + (single ? folded : "[" + folded + "]") + affix.second);
  }
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : ",") + part;
  return out;
}

}  // namespace xft::inventory
