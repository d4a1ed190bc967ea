#include "playbooks/unified_diff.h"

#include <dtl/dtl.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace xft::playbooks {
namespace {

constexpr size_t kContext = 3;
// dtl's time grows with (lines) x (differences); past this many lines in the
// changed region the worst case would take seconds per file and host.
constexpr size_t kMaxCompared = 20000;

// Lines with their "\n" kept, so that a last line without one differs from
// the same text with one, as diff(1) sees them.
std::vector<std::string> lines_with_newlines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

struct Edit {
  char tag;  // ' ' kept, '-' removed, '+' added
  std::string line;
};

// dtl's shortest edit script over the region between the common prefix and
// suffix (most file edits are local, and this keeps dtl's work small), each
// run of changes written with its removals before its additions, as diff -u
// does.
std::vector<Edit> middle_edits(std::vector<std::string> a, std::vector<std::string> b) {
  dtl::Diff<std::string, std::vector<std::string>> diff(a, b);
  diff.compose();
  std::vector<Edit> edits, removed, added;
  auto flush = [&] {
    for (auto* run : {&removed, &added}) {
      edits.insert(edits.end(), run->begin(), run->end());
      run->clear();
    }
  };
  for (const auto& [line, info] : diff.getSes().getSequence()) {
    if (info.type == dtl::SES_DELETE) removed.push_back({'-', line});
    else if (info.type == dtl::SES_ADD) added.push_back({'+', line});
    else flush(), edits.push_back({' ', line});
  }
  flush();
  return edits;
}

// "a,b" of a hunk header: a line count of 0 names the line before the hunk.
std::string range(size_t before, size_t count) {
  if (count == 1) return std::to_string(before + 1);
  return std::to_string(count == 0 ? before : before + 1) + "," + std::to_string(count);
}

std::string hunk(const std::vector<Edit>& edits, size_t begin, size_t end) {
  size_t old_before = 0, new_before = 0, old_count = 0, new_count = 0;
  for (size_t i = 0; i < begin; ++i) old_before += edits[i].tag != '+', new_before += edits[i].tag != '-';
  for (size_t i = begin; i < end; ++i) old_count += edits[i].tag != '+', new_count += edits[i].tag != '-';
  std::string out = "@@ -" + range(old_before, old_count) + " +" + range(new_before, new_count) + " @@\n";
  for (size_t i = begin; i < end; ++i) {
    out += edits[i].tag + edits[i].line;
    if (edits[i].line.empty() || edits[i].line.back() != '\n') out += "\n\\ No newline at end of file\n";
  }
  return out;
}

}  // namespace

std::string unified_diff(const std::string& before, const std::string& after, const std::string& path) {
  if (before == after) return "";
  auto a = lines_with_newlines(before), b = lines_with_newlines(after);
  size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix && a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix])
    ++suffix;
  if (a.size() + b.size() - 2 * (prefix + suffix) > kMaxCompared) return "(content differs; too large to show)\n";

  std::vector<Edit> edits;
  for (size_t i = 0; i < prefix; ++i) edits.push_back({' ', a[i]});
  auto middle = middle_edits({a.begin() + prefix, a.end() - suffix}, {b.begin() + prefix, b.end() - suffix});
  edits.insert(edits.end(), middle.begin(), middle.end());
  for (size_t i = a.size() - suffix; i < a.size(); ++i) edits.push_back({' ', a[i]});

  std::string out = "--- " + path + " (before)\n+++ " + path + " (after)\n";
  // A hunk runs from 3 lines before a change to 3 after the last change that
  // is at most 6 kept lines from the one before it.
  for (size_t i = 0; i < edits.size();) {
    if (edits[i].tag == ' ') {
      ++i;
      continue;
    }
    size_t begin = i >= kContext ? i - kContext : 0, last = i;
    for (size_t j = i + 1; j < edits.size() && j <= last + 2 * kContext + 1; ++j)
      if (edits[j].tag != ' ') last = j;
    size_t end = std::min(edits.size(), last + 1 + kContext);
    out += hunk(edits, begin, end);
    i = end;
  }
  return out;
}

}  // namespace xft::playbooks
