#include "engine/chat_template/template.h"

#include "engine/chat_template/interpreter.h"
#include "engine/chat_template/lexer.h"

namespace xft::engine::chat_template {

Expected<Template> Template::parse(std::string_view source) {
  auto tokens = lex_template(source);
  if (!tokens) return tokens.error();
  auto body = parse_template(*tokens);
  if (!body) return body.error();
  return Template(std::make_shared<const Body>(std::move(*body)));
}

Expected<Text> Template::render(const Dict& context, const RenderLimits& limits) const {
  try {
    Interpreter interpreter(limits, context);
    return interpreter.run(*body_);
  } catch (const TemplateError& e) {
    return make_error(e.what());
  } catch (const std::bad_alloc&) {  // a limit not tight enough for this machine: still an error, not a crash
    return make_error("template rendering ran out of memory");
  }
}

}  // namespace xft::engine::chat_template
