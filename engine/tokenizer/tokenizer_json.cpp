// Loading a Hugging Face tokenizer.json (Qwen2/2.5/3, Qwen3.5) and converting one to
// Qwen1's qwen.tiktoken.
#include <algorithm>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/json_scan.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/tiktoken.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_data.h"

namespace xft::engine {

using nlohmann::json;

namespace {

Error json_error(const std::string& source, const std::string& field, const std::string& what) {
  return make_error(source + ": " + field + ": " + what);
}

Expected<json> parse_json(const std::string& text, const std::string& source) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    return make_error(source + ": not valid JSON (" + e.what() + ")");
  }
}

// The normalizer must be NFC or absent: anything else would silently give
// different ids than the model was trained with.
Expected<bool> read_normalizer(const json& root, const std::string& source) {
  if (!root.contains("normalizer") || root["normalizer"].is_null()) return false;
  const json& n = root["normalizer"];
  if (n.is_object() && n.value("type", "") == "NFC") return true;
  return json_error(source, "normalizer",
                    "only {\"type\": \"NFC\"} or null is supported, found " + n.dump());
}

// The hand-written scanner implements Qwen2/3's split pattern and Qwen3.5's;
// refuse others.
Expected<SplitPattern> read_pre_tokenizer(const json& root, const std::string& source) {
  const json* p = root.contains("pre_tokenizer") ? &root["pre_tokenizer"] : nullptr;
  std::vector<const json*> steps;
  if (p && p->is_object() && p->value("type", "") == "Sequence" && p->contains("pretokenizers") &&
      (*p)["pretokenizers"].is_array())
    for (const json& s : (*p)["pretokenizers"]) steps.push_back(&s);
  else if (p && p->is_object())
    steps.push_back(p);
  std::optional<SplitPattern> split;
  bool has_byte_level = false;
  for (const json* s : steps) {
    const std::string type = s->is_object() ? s->value("type", "") : "";
    const std::string regex = type == "Split" && s->contains("pattern") && (*s)["pattern"].is_object()
                                  ? (*s)["pattern"].value("Regex", "")
                                  : "";
    const bool isolated = s->is_object() && s->value("behavior", "") == "Isolated" && !s->value("invert", false);
    if (isolated && regex == kQwenSplitPattern)
      split = SplitPattern::qwen2;
    else if (isolated && regex == kQwen35SplitPattern)
      split = SplitPattern::qwen35;
    else if (type == "ByteLevel" && !s->value("add_prefix_space", false) &&
             !s->value("use_regex", true))
      has_byte_level = true;
    else
      return json_error(source, "pre_tokenizer",
                        "unsupported step " + s->dump().substr(0, 200) +
                            "; only Qwen2/3's or Qwen3.5's Split regex (Isolated) followed by ByteLevel "
                            "(use_regex false) is implemented");
  }
  if (!split || !has_byte_level)
    return json_error(source, "pre_tokenizer",
                      "expected Qwen's Split regex and a ByteLevel step, found " +
                          (p ? p->dump().substr(0, 200) : std::string("nothing")));
  return *split;
}

std::string line_of(std::string_view text, size_t pos) {
  return std::to_string(1 + std::count(text.begin(), text.begin() + std::min(pos, text.size()), '\n'));
}

Error malformed(const std::string& source, std::string_view text, size_t pos, const std::string& field,
                const std::string& expected) {
  return json_error(source, field, "malformed at line " + line_of(text, pos) + ", expected " + expected);
}

// model.vocab: {"token": id, ...}, token text in the byte-level alphabet.
Expected<void> read_vocab(std::string_view text, json_scan::Span span, const std::string& source,
                          TokenizerData& data) {
  const std::string field = "model.vocab";
  size_t pos = json_scan::skip_space(text, span.begin);
  if (pos >= span.end || text[pos] != '{') return malformed(source, text, pos, field, "an object of token -> id");
  pos = json_scan::skip_space(text, pos + 1);
  std::string key;
  while (pos < span.end && text[pos] != '}') {
    const size_t entry = pos;
    pos = json_scan::read_string(text, pos, key);
    if (pos == std::string_view::npos) return malformed(source, text, entry, field, "a token string");
    pos = json_scan::skip_space(text, pos);
    if (pos >= span.end || text[pos] != ':') return malformed(source, text, entry, field, "':' after a token");
    pos = json_scan::skip_space(text, pos + 1);
    int64_t id = 0;
    const size_t digits = pos;
    while (pos < span.end && text[pos] >= '0' && text[pos] <= '9' && id <= (1 << 30))
      id = id * 10 + (text[pos++] - '0');
    if (pos == digits || id > (1 << 30))
      return json_error(source, field + "[\"" + key + "\"]", "id is not a small non-negative integer");
    std::optional<std::string> bytes = byte_level_to_bytes(key);
    if (!bytes || bytes->empty())
      return json_error(source, field + "[\"" + key + "\"]",
                        "not a byte-level token (a character outside GPT-2's byte alphabet)");
    if (data.id_to_bytes.size() <= static_cast<size_t>(id)) data.id_to_bytes.resize(id + 1);
    if (!data.id_to_bytes[id].empty())
      return json_error(source, field + "[\"" + key + "\"]", "id " + std::to_string(id) + " is used twice");
    data.id_to_bytes[id] = std::move(*bytes);
    pos = json_scan::skip_space(text, pos);
    if (pos < span.end && text[pos] == ',') pos = json_scan::skip_space(text, pos + 1);
    else if (pos >= span.end || text[pos] != '}') return malformed(source, text, pos, field, "',' or '}'");
  }
  return {};
}

// model.merges: "left right" strings (older files) or ["left", "right"] pairs;
// the rank of a merge is its position.
Expected<void> read_merges(std::string_view text, json_scan::Span span, const std::string& source,
                           TokenizerData& data) {
  size_t pos = json_scan::skip_space(text, span.begin);
  if (pos >= span.end || text[pos] != '[') return malformed(source, text, pos, "model.merges", "an array");
  pos = json_scan::skip_space(text, pos + 1);
  data.pairs.reserve(data.ordinary.size());
  std::string left, right;
  for (int32_t rank = 0; pos < span.end && text[pos] != ']'; ++rank) {
    const std::string field = "model.merges[" + std::to_string(rank) + "]";
    const size_t entry = pos;
    if (text[pos] == '"') {
      pos = json_scan::read_string(text, pos, left);
      const size_t space = pos == std::string_view::npos ? std::string::npos : left.find(' ', 1);
      if (space == std::string::npos) return malformed(source, text, entry, field, "\"left right\"");
      right = left.substr(space + 1);
      left.resize(space);
    } else if (text[pos] == '[') {
      pos = json_scan::read_string(text, json_scan::skip_space(text, pos + 1), left);
      if (pos != std::string_view::npos) pos = json_scan::skip_space(text, pos);
      if (pos == std::string_view::npos || text[pos] != ',')
        return malformed(source, text, entry, field, "[\"left\", \"right\"]");
      pos = json_scan::read_string(text, json_scan::skip_space(text, pos + 1), right);
      if (pos != std::string_view::npos) pos = json_scan::skip_space(text, pos);
      if (pos == std::string_view::npos || text[pos] != ']')
        return malformed(source, text, entry, field, "[\"left\", \"right\"]");
      ++pos;
    } else {
      return malformed(source, text, entry, field, "\"left right\" or [\"left\", \"right\"]");
    }
    std::optional<std::string> l = byte_level_to_bytes(left), r = byte_level_to_bytes(right);
    const int32_t left_id = l ? data.ordinary.find(*l) : -1;
    const int32_t right_id = r ? data.ordinary.find(*r) : -1;
    const int32_t merged_id = left_id >= 0 && right_id >= 0 ? data.ordinary.find(*l + *r) : -1;
    if (merged_id < 0)
      return json_error(source, field,
                        "\"" + left + "\" + \"" + right + "\" or their merge is not in model.vocab");
    data.pairs.insert(left_id, right_id, {rank, merged_id});
    pos = json_scan::skip_space(text, pos);
    if (pos < span.end && text[pos] == ',') pos = json_scan::skip_space(text, pos + 1);
    else if (pos >= span.end || text[pos] != ']') return malformed(source, text, pos, "model.merges", "',' or ']'");
  }
  return {};
}

Expected<void> read_added_tokens(const json& root, const std::string& source, TokenizerData& data) {
  if (!root.contains("added_tokens")) return {};
  const json& added = root["added_tokens"];
  if (!added.is_array()) return json_error(source, "added_tokens", "not an array");
  for (size_t i = 0; i < added.size(); ++i) {
    const json& t = added[i];
    const std::string field = "added_tokens[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || t["id"].get<int64_t>() < 0 ||
        !t.contains("content") || !t["content"].is_string() || t["content"].get<std::string>().empty())
      return json_error(source, field, "needs a non-negative integer \"id\" and a non-empty \"content\"");
    if (t.value("lstrip", false) || t.value("rstrip", false) || t.value("single_word", false))
      return json_error(source, field, "lstrip/rstrip/single_word are not supported (Qwen never sets them)");
    data.added.push_back({t["content"].get<std::string>(), t["id"].get<int32_t>(), t.value("special", false)});
  }
  return {};
}

// Everything but the DOM parse: the checks on the small members (via `root`)
// and the scans of the two big ones (via their spans in `text`).
Expected<std::shared_ptr<TokenizerData>> data_from_parsed(const json& root, std::string_view text,
                                                          const json_scan::Span& vocab_span,
                                                          const json_scan::Span& merges_span,
                                                          const std::string& source) {
  if (!root.is_object() || !root.contains("model") || !root["model"].is_object())
    return json_error(source, "model", "missing; not a Hugging Face tokenizer.json");
  const json& model = root["model"];
  if (model.value("type", "BPE") != "BPE")
    return json_error(source, "model.type", "\"" + model.value("type", "") + "\" is not supported, only BPE");
  if (!vocab_span.found()) return json_error(source, "model.vocab", "missing; a BPE model needs its vocabulary");
  if (!merges_span.found()) return json_error(source, "model.merges", "missing; a BPE model needs its merges");
  if (model.value("byte_fallback", false) || !model.value("continuing_subword_prefix", "").empty() ||
      !model.value("end_of_word_suffix", "").empty())
    return json_error(source, "model",
                      "byte_fallback / continuing_subword_prefix / end_of_word_suffix are not supported");

  auto data = std::make_shared<TokenizerData>();
  Expected<bool> nfc = read_normalizer(root, source);
  if (!nfc) return nfc.error();
  data->normalize_nfc = *nfc;
  data->whole_piece_lookup = model.value("ignore_merges", false);
  Expected<SplitPattern> split = read_pre_tokenizer(root, source);
  if (!split) return split.error();
  data->split = *split;

  if (Expected<void> r = read_vocab(text, vocab_span, source, *data); !r) return r.error();
  if (std::string problem = index_ordinary_tokens(*data); !problem.empty())
    return json_error(source, "model.vocab", problem);
  if (Expected<void> r = read_merges(text, merges_span, source, *data); !r) return r.error();
  if (Expected<void> r = read_added_tokens(root, source, *data); !r) return r.error();
  if (std::string problem = finish_tokenizer_data(*data); !problem.empty())
    return make_error(source + ": " + problem);
  return data;
}

}  // namespace

Expected<Tokenizer> Tokenizer::from_tokenizer_json(const std::string& text, const std::string& source) {
  // Cut the two huge members out so that nlohmann::json only sees the rest.
  bool bad = false;
  const json_scan::Span model_span = json_scan::find_member(text, 0, "model", bad);
  json_scan::Span vocab_span, merges_span;
  if (model_span.found()) {
    vocab_span = json_scan::find_member(text, model_span.begin, "vocab", bad);
    if (!bad) merges_span = json_scan::find_member(text, model_span.begin, "merges", bad);
  }
  std::string rest;
  if (!bad && vocab_span.found() && merges_span.found()) {
    const bool vocab_first = vocab_span.begin < merges_span.begin;
    const json_scan::Span& first = vocab_first ? vocab_span : merges_span;
    const json_scan::Span& second = vocab_first ? merges_span : vocab_span;
    rest.reserve(text.size() - (first.end - first.begin) - (second.end - second.begin) + 4);
    rest.append(text, 0, first.begin) += vocab_first ? "{}" : "[]";
    rest.append(text, first.end, second.begin - first.end) += vocab_first ? "[]" : "{}";
    rest.append(text, second.end);
  }
  // Malformed or unusual files go through nlohmann whole, for its error message.
  Expected<json> parsed = parse_json(rest.empty() ? text : rest, source);
  if (!parsed) return parsed.error();
  // Fields of the wrong JSON type make nlohmann::json throw; report them as
  // this file's error rather than let them escape.
  try {
    Expected<std::shared_ptr<TokenizerData>> data =
        data_from_parsed(*parsed, text, vocab_span, merges_span, source);
    if (!data) return data.error();
    return Tokenizer(std::move(*data));
  } catch (const json::exception& e) {
    return make_error(source + ": unexpected JSON structure (" + e.what() + ")");
  }
}

namespace {

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    out += kAlphabet[v >> 18], out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63], out += kAlphabet[v & 63];
  }
  if (bytes.size() - i == 1) {
    const uint32_t v = uint8_t(bytes[i]) << 16;
    out += kAlphabet[v >> 18], out += kAlphabet[(v >> 12) & 63], out += "==";
  } else if (bytes.size() - i == 2) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    out += kAlphabet[v >> 18], out += kAlphabet[(v >> 12) & 63], out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

}  // namespace

Expected<std::string> tiktoken_from_tokenizer_json(const std::string& text) {
  const std::string source = "tokenizer.json";
  bool bad = false;
  const json_scan::Span model_span = json_scan::find_member(text, 0, "model", bad);
  json_scan::Span vocab_span;
  if (model_span.found()) vocab_span = json_scan::find_member(text, model_span.begin, "vocab", bad);
  if (bad) {
    Expected<json> parsed = parse_json(text, source);  // for its error message
    if (!parsed) return parsed.error();
  }
  if (!vocab_span.found())
    return json_error(source, "model.vocab", "missing; not a Hugging Face BPE tokenizer.json");
  TokenizerData data;
  if (Expected<void> r = read_vocab(text, vocab_span, source, data); !r) return r.error();
  std::string out;
  out.reserve(data.id_to_bytes.size() * 16);
  for (size_t rank = 0; rank < data.id_to_bytes.size(); ++rank) {
    if (data.id_to_bytes[rank].empty()) continue;  // a gap in the ids: no such rank
    out += base64(data.id_to_bytes[rank]);
    out += ' ';
    out += std::to_string(rank);
    out += '\n';
  }
  return out;
}

}  // namespace xft::engine
