// jinja2's filters and tests, Python's str/dict methods and the globals
// Hugging Face passes (range, namespace, raise_exception, ...), each limited
// to data: no method that mutates its input or reaches object internals.
#pragma once

#include <optional>
#include <string>

#include "engine/chat_template/interpreter.h"

namespace xft::engine::chat_template {

Value apply_filter(Interpreter& in, const std::string& name, const Value& subject, Args args, Kwargs kwargs);
bool apply_test(Interpreter& in, const std::string& name, const Value& subject, const Args& args);
// nullopt: `subject` has no such method (the attribute is then looked up as data).
std::optional<Value> call_method(Interpreter& in, const Value& subject, const std::string& name, Args args,
                                 Kwargs kwargs);
bool is_global_function(const std::string& name);
Value call_global(Interpreter& in, const std::string& name, Args args, Kwargs kwargs);

}  // namespace xft::engine::chat_template
