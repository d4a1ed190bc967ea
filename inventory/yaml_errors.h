// Collects every problem of an inventory file as "path:line:col: field: what
// (fix)" so that one run of `validate` shows them all.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"

namespace xft::inventory {

class ErrorList {
 public:
  explicit ErrorList(std::string path) : path_(std::move(path)) {}

  // line and column are 0-based as yaml-cpp reports them; negative means unknown.
  void add(int line, int column, const std::string& field, const std::string& what);
  bool empty() const { return entries_.empty(); }
  // All messages, sorted by position, one per line (no trailing newline).
  Error to_error() const;

 private:
  struct Entry {
    int line;
    int column;
    std::string text;
  };
  std::string path_;
  std::vector<Entry> entries_;
};

// Edit distance (with transpositions), for "did you mean" suggestions.
size_t edit_distance(const std::string& a, const std::string& b);
// The closest candidate within a small distance, or "" when none is close.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace xft::inventory
