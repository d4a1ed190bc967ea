// A grammar for constrained decoding: a tree of value nodes compiled from a
// JSON schema (json_schema.h) or built for a forced tool call. Every node
// knows the first bytes it may start with (anyOf alternatives must start
// differently, so a byte picks the alternative without backtracking) and the
// fewest bytes of any value it accepts (min_bytes), which lets the matcher
// tell how far a partial answer is from complete.
//
// Output is compact JSON: no whitespace except one optional space after ':'
// and after ','.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

namespace xft::engine::constrain {

enum class NodeKind : uint8_t {
  Any,       // any JSON value
  Literals,  // one of a set of exact byte strings (enum, const, true/false/null)
  Integer,
  Number,
  String,
  Array,
  Object,
  AnyOf,   // alternatives with disjoint first bytes
  Seq,     // children one after the other (the forced tool call's frame)
  Choice,  // one of several (literal prefix, node) pairs, prefixes prefix-free
};

struct Property {
  std::string key;  // the JSON-encoded key, quotes included
  int32_t node = -1;
  bool required = false;
};

struct Node {
  NodeKind kind = NodeKind::Any;
  // Literals: literals[lit_begin, lit_end) of the grammar, sorted.
  // Choice: literals[lit_begin, lit_end) are the sorted prefixes, children[i] the node after literal lit_begin+i.
  int32_t lit_begin = 0, lit_end = 0;
  // String
  uint32_t min_length = 0, max_length = UINT32_MAX;  // in code points
  // Array
  int32_t items = -1;
  uint32_t min_items = 0, max_items = UINT32_MAX;
  // Object: properties sorted by key; any_keys: no declared properties, any string key with any value.
  std::vector<Property> properties;
  bool any_keys = false;
  uint64_t required_mask = 0;  // bit i: properties[i] is required
  // AnyOf alternatives, Seq elements, Choice continuations.
  std::vector<int32_t> children;
  std::bitset<256> first_bytes;
  uint32_t min_bytes = 0;
};

struct Grammar {
  std::vector<Node> nodes;
  std::vector<std::string> literals;
  int32_t root = -1;
  // Shared nodes an Any value dispatches to.
  int32_t any = -1, any_object = -1, any_array = -1, any_string = -1, any_number = -1, any_word = -1;
};

// Appends the nodes every grammar needs for Any values; returns the Any node.
int32_t add_any_nodes(Grammar& grammar);
// Appends a Literals node over `values` (deduplicated, sorted).
int32_t add_literals(Grammar& grammar, std::vector<std::string> values);
// Fills first_bytes and min_bytes of node `id` from its (already finished) children.
void finish_node(Grammar& grammar, int32_t id);

// The node that starts with `byte` when a value of `id` is expected (AnyOf and
// Any resolve to an alternative), or -1.
int32_t resolve(const Grammar& grammar, int32_t id, uint8_t byte);

}  // namespace xft::engine::constrain
