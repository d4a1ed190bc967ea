#include "cli/allreduce_selection.h"

#include "engine/comm/selection.h"
#include "inventory/grammar.h"

namespace xft::cli {
namespace {

constexpr size_t kMaxSelectionBytes = 1024;

bool selection_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':' ||
         c == ';' || c == '-' || c == ' ';
}

std::string source_text(const std::string& what, const std::string& text) {
  return what + (what.rfind("--", 0) == 0 ? " " : "=") + inventory::quoted_value(text);
}

}  // namespace

Expected<void> check_allreduce_selection(const std::string& what, const std::string& text, bool allow_all) {
  const std::string example = "e.g. 'ring' or 'recursive_doubling:0-16384;ring:16385-max'";
  if (text.size() > kMaxSelectionBytes)
    return make_error(source_text(what, text) + ": longer than " + std::to_string(kMaxSelectionBytes) +
                      " bytes; " + example);
  for (unsigned char c : text)
    if (!selection_char(c))
      return make_error(source_text(what, text) + ": `" + inventory::printable(std::string(1, static_cast<char>(c))) +
                        "` cannot appear in an allreduce selection (ALGO or ALGO:LO-HI entries joined by ';', " +
                        example + ")");
  if (text == "auto" || (allow_all && text == "all")) return {};
  if (auto parsed = engine::comm::Selection::parse(text); !parsed)
    return make_error(source_text(what, text) + ": " + parsed.error().message);
  return {};
}

}  // namespace xft::cli
