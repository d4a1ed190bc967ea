// `xftctl tokenize`: text -> Qwen token ids, or ids -> text with --decode,
// using a model directory's tokenizer.json or qwen.tiktoken. Handy to check
// prompts, count tokens, and read ids from logs.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "engine/tokenizer/tokenizer.h"
#include "common/log.h"

namespace xft::cli {
namespace {

struct TokenizeOptions {
  std::string model_dir;
  std::optional<std::string> text;
  bool decode = false;
  bool no_special = false;
};

std::string read_stdin() {
  std::cin >> std::noskipws;
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

std::string trim(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

// "[9707,1879]" or "9707,1879" (spaces and newlines allowed) -> ids.
Expected<std::vector<int32_t>> parse_ids(const std::string& input, const std::string& where,
                                         const engine::Tokenizer& tok) {
  const std::string text = trim(input);
  const std::string how = "; give a JSON array like [9707,1879] or comma-separated ids like 9707,1879";
  std::vector<int64_t> values;
  if (!text.empty() && text.front() == '[') {
    nlohmann::json array;
    try {
      array = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      return make_error(where + ": not a JSON array of ids (" + e.what() + ")" + how);
    }
    for (size_t i = 0; i < array.size(); ++i) {
      if (!array[i].is_number_integer())
        return make_error(where + ": item " + std::to_string(i) + " (" + array[i].dump() +
                          ") is not an integer token id" + how);
      values.push_back(array[i].get<int64_t>());
    }
  } else {
    size_t pos = 0, item = 0;
    while (pos < text.size()) {
      size_t end = text.find(',', pos);
      if (end == std::string::npos) end = text.size();
      const std::string field = trim(text.substr(pos, end - pos));
      pos = end + 1;
      if (field.empty() || field.find_first_not_of("-0123456789") != std::string::npos ||
          field.size() > 12)
        return make_error(where + ": item " + std::to_string(item) + " (\"" + field +
                          "\") is not an integer token id" + how);
      values.push_back(std::stoll(field));
      ++item;
    }
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < 0 || values[i] >= tok.vocab_size())
      return make_error(where + ": item " + std::to_string(i) + " (" + std::to_string(values[i]) +
                        ") is outside the vocabulary (ids 0.." + std::to_string(tok.vocab_size() - 1) + ")");
    ids.push_back(static_cast<int32_t>(values[i]));
  }
  return ids;
}

std::string ids_json(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out + "]";
}

void run_tokenize(const TokenizeOptions& options, Context& ctx) {
  Expected<engine::Tokenizer> tok = engine::Tokenizer::load(options.model_dir);
  if (!tok) {
    spdlog::error("tokenize: {}", tok.error().message);
    ctx.exit_code = exit_error;
    return;
  }
  const std::string input = options.text ? *options.text : read_stdin();
  if (options.decode) {
    Expected<std::vector<int32_t>> ids = parse_ids(input, options.text ? "--text" : "stdin", *tok);
    if (!ids) {
      spdlog::error("tokenize: {}", ids.error().message);
      ctx.exit_code = exit_error;
      return;
    }
    // Verbatim: no newline is added, so decoding round-trips byte for byte.
    std::cout << tok->decode(*ids) << std::flush;
  } else {
    const std::vector<int32_t> ids = options.no_special ? tok->encode_ordinary(input) : tok->encode(input);
    std::cout << ids_json(ids) << "\n";
  }
  ctx.exit_code = exit_ok;
}

}  // namespace

void add_tokenize_commands(CLI::App& app, Context& ctx) {
  auto options = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize",
      "Print the Qwen token ids of a text as a JSON array, or with --decode the text of ids");
  cmd->add_option("--model", options->model_dir,
                  "model directory holding tokenizer.json (Qwen2/2.5/3) or qwen.tiktoken (Qwen1)")
      ->required();
  cmd->add_option("--text", options->text,
                  "the input, taken verbatim (default: all of stdin, a final newline included)");
  cmd->add_flag("--decode", options->decode,
                "read ids ([9707,1879] or 9707,1879) and print their text verbatim (no newline added)");
  cmd->add_flag("--no-special", options->no_special,
                "tokenize special tokens written in the text (<|im_start|>) as plain text");
  cmd->callback([options, &ctx] { run_tokenize(*options, ctx); });
}

}  // namespace xft::cli
