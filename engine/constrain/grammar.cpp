#include "engine/constrain/grammar.h"

#include <algorithm>

namespace xft::engine::constrain {

namespace {

int32_t add_node(Grammar& grammar, Node node) {
  grammar.nodes.push_back(std::move(node));
  return static_cast<int32_t>(grammar.nodes.size() - 1);
}

std::bitset<256> number_first_bytes() {
  std::bitset<256> bytes;
  bytes.set('-');
  for (int c = '0'; c <= '9'; ++c) bytes.set(c);
  return bytes;
}

// Appends a node of `kind` (set_fields fills in the rest) with its first
// bytes and least length worked out.
template <class SetFields>
int32_t add_finished(Grammar& grammar, NodeKind kind, SetFields set_fields) {
  Node node;
  node.kind = kind;
  set_fields(node);
  const int32_t id = add_node(grammar, std::move(node));
  finish_node(grammar, id);
  return id;
}

int32_t add_finished(Grammar& grammar, NodeKind kind) {
  return add_finished(grammar, kind, [](Node&) {});
}

uint32_t sum_capped(uint64_t value) { return static_cast<uint32_t>(std::min<uint64_t>(value, UINT32_MAX / 4)); }

}  // namespace

int32_t add_literals(Grammar& grammar, std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return add_finished(grammar, NodeKind::Literals, [&](Node& node) {
    node.lit_begin = static_cast<int32_t>(grammar.literals.size());
    for (auto& v : values) grammar.literals.push_back(std::move(v));
    node.lit_end = static_cast<int32_t>(grammar.literals.size());
  });
}

int32_t add_any_nodes(Grammar& grammar) {
  grammar.any = add_finished(grammar, NodeKind::Any);
  grammar.any_object = add_finished(grammar, NodeKind::Object, [](Node& node) { node.any_keys = true; });
  grammar.any_array = add_finished(grammar, NodeKind::Array, [&](Node& node) { node.items = grammar.any; });
  grammar.any_string = add_finished(grammar, NodeKind::String);
  grammar.any_number = add_finished(grammar, NodeKind::Number);
  grammar.any_word = add_literals(grammar, {"true", "false", "null"});
  return grammar.any;
}

void finish_node(Grammar& grammar, int32_t id) {
  Node& node = grammar.nodes[id];
  const auto& nodes = grammar.nodes;
  node.first_bytes.reset();
  switch (node.kind) {
    case NodeKind::Any:
      node.first_bytes = number_first_bytes();
      for (char c : std::string("{[\"tfn")) node.first_bytes.set(static_cast<uint8_t>(c));
      node.min_bytes = 1;
      break;
    case NodeKind::Literals: {
      uint64_t shortest = UINT32_MAX;
      for (int32_t i = node.lit_begin; i < node.lit_end; ++i) {
        const std::string& lit = grammar.literals[i];
        if (!lit.empty()) node.first_bytes.set(static_cast<uint8_t>(lit[0]));
        shortest = std::min<uint64_t>(shortest, lit.size());
      }
      node.min_bytes = sum_capped(shortest);
      break;
    }
    case NodeKind::Integer:
    case NodeKind::Number:
      node.first_bytes = number_first_bytes();
      node.min_bytes = 1;
      break;
    case NodeKind::String:
      node.first_bytes.set('"');
      node.min_bytes = sum_capped(2ull + node.min_length);
      break;
    case NodeKind::Array: {
      node.first_bytes.set('[');
      const uint64_t item = nodes[node.items].min_bytes;
      node.min_bytes = sum_capped(2ull + node.min_items * item + (node.min_items > 0 ? node.min_items - 1 : 0));
      break;
    }
    case NodeKind::Object: {
      node.first_bytes.set('{');
      uint64_t total = 2;
      int required = 0;
      for (const Property& p : node.properties) {
        if (!p.required) continue;
        total += p.key.size() + 1 + nodes[p.node].min_bytes;
        ++required;
      }
      node.min_bytes = sum_capped(total + (required > 0 ? required - 1 : 0));
      break;
    }
    case NodeKind::AnyOf: {
      uint64_t least = UINT32_MAX;
      for (int32_t child : node.children) {
        node.first_bytes |= nodes[child].first_bytes;
        least = std::min<uint64_t>(least, nodes[child].min_bytes);
      }
      node.min_bytes = sum_capped(least);
      break;
    }
    case NodeKind::Seq: {
      uint64_t total = 0;
      for (int32_t child : node.children) total += nodes[child].min_bytes;
      if (!node.children.empty()) node.first_bytes = nodes[node.children.front()].first_bytes;
      node.min_bytes = sum_capped(total);
      break;
    }
    case NodeKind::Choice: {
      uint64_t least = UINT32_MAX;
      for (int32_t i = node.lit_begin; i < node.lit_end; ++i) {
        const std::string& prefix = grammar.literals[i];
        node.first_bytes.set(static_cast<uint8_t>(prefix[0]));
        least = std::min<uint64_t>(least, prefix.size() + nodes[node.children[i - node.lit_begin]].min_bytes);
      }
      node.min_bytes = sum_capped(least);
      break;
    }
  }
}

int32_t resolve(const Grammar& grammar, int32_t id, uint8_t byte) {
  const Node& node = grammar.nodes[id];
  if (!node.first_bytes.test(byte)) return -1;
  if (node.kind == NodeKind::Any) {
    switch (byte) {
      case '{': return grammar.any_object;
      case '[': return grammar.any_array;
      case '"': return grammar.any_string;
      case 't':
      case 'f':
      case 'n': return grammar.any_word;
      default: return grammar.any_number;
    }
  }
  if (node.kind == NodeKind::AnyOf) {
    for (int32_t child : node.children) {
      if (grammar.nodes[child].first_bytes.test(byte)) return resolve(grammar, child, byte);
    }
    return -1;
  }
  return id;
}

}  // namespace xft::engine::constrain
