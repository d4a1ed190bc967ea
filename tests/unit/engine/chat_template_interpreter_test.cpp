// Focused cases of the chat-template interpreter: each jinja2 feature the
// Qwen templates and other Hugging Face templates use, with the output jinja2
// gives (checked by hand against jinja2 3.1 semantics), the sandbox limits,
// and the tracking of which output bytes came from the caller's data.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/chat_template/json_value.h"
#include "engine/chat_template/template.h"

namespace xft::engine::chat_template {
namespace {

Expected<Text> render_with(const std::string& source, const std::string& context_json, const RenderLimits& limits = {}) {
  auto tmpl = Template::parse(source);
  if (!tmpl) return tmpl.error();
  Value context = value_from_json(nlohmann::ordered_json::parse(context_json), true);
  return tmpl->render(*context.dict, limits);
}

std::string render(const std::string& source, const std::string& context_json = "{}") {
  auto out = render_with(source, context_json);
  return out ? out->bytes : "ERROR: " + out.error().message;
}

std::string error_of(const std::string& source, const std::string& context_json = "{}", const RenderLimits& limits = {}) {
  auto out = render_with(source, context_json, limits);
  return out ? "rendered: " + out->bytes : out.error().message;
}

TEST(ChatTemplateInterpreter, WhitespaceControlAsHuggingFaceSetsIt) {
  // trim_blocks eats the newline after a block tag, lstrip_blocks the indentation before it.
  EXPECT_EQ(render("{% if true %}\n  a\n  {% endif %}\nb\n"), "  a\nb");
  EXPECT_EQ(render("x  {%- if true -%}  y  {%- endif -%}  z"), "xyz");
  EXPECT_EQ(render("a {{- ' b ' -}} c"), "a b c");
  EXPECT_EQ(render("{# note #}\nkeep\n"), "keep");
  EXPECT_EQ(render("line\n    {% set x = 1 %}\nnext"), "line\nnext");
  EXPECT_EQ(render("  {{ 'v' }}"), "  v");  // lstrip_blocks leaves {{ }} alone
}

TEST(ChatTemplateInterpreter, LoopVariablesBreakContinueElseAndFilter) {
  EXPECT_EQ(render("{% for x in [3,4,5] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}"),
            "10TrueFalse3;21FalseFalse3;32FalseTrue3;");
  EXPECT_EQ(render("{% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "13");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [1,2,3,4] if x is odd %}{{ x }}/{{ loop.length }} {% endfor %}"), "1/2 3/2 ");
  EXPECT_EQ(render("{% for x in ['a','b'] %}{{ loop.previtem is defined }}{{ loop.nextitem | default('-') }}{% endfor %}"),
            "FalsebTrue-");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': [2]}|items %}{{ k }}={{ v }} {% endfor %}"), "a=1 b=[2] ");
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"), "1");
}

TEST(ChatTemplateInterpreter, NamespaceMacroAndCall) {
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"), "6");
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', punct='?') }}"),
            "Hi a! Hi b?");
  EXPECT_EQ(render("{% macro wrap() %}[{{ caller() }}]{% endmacro %}{% call wrap() %}inner{% endcall %}"), "[inner]");
  EXPECT_EQ(render("{% set block %}a{{ 1 + 1 }}{% endset %}{{ block ~ '!' }}"), "a2!");
  EXPECT_EQ(render("{% filter upper %}shout{% endfilter %}"), "SHOUT");
}

TEST(ChatTemplateInterpreter, TestsAndOperators) {
  EXPECT_EQ(render("{{ x is defined }}{{ y is undefined }}{{ n is none }}{{ s is string }}{{ d is mapping }}{{ l is sequence }}",
                   R"({"x": 1, "n": null, "s": "t", "d": {}, "l": []})"),
            "TrueTrueTrueTrueTrueTrue");
  EXPECT_EQ(render("{{ t is true }}{{ t is false }}{{ 1 is number }}{{ t is boolean }}{{ s is not string }}", R"({"t": true, "s": 1})"),
            "TrueFalseTrueTrueTrue");
  EXPECT_EQ(render("{{ 'a' in 'cat' }}{{ 'z' not in ['a'] }}{{ 'k' in {'k': 1} }}"), "TrueTrueTrue");
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 1.0 }}"), "3 -4 1 2 3.5 1024 2.0");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none }}|{{ 'x' + 'y' }}|{{ [1] + [2] }}"), "a1None|xy|[1, 2]");
  EXPECT_EQ(render("{{ 'yes' if x else 'no' }}{{ 'only' if false }}.", R"({"x": 0})"), "no.");
  EXPECT_EQ(render("{{ a or 'fallback' }} {{ 0 and 1 }} {{ not none }}"), "fallback 0 True");
}

TEST(ChatTemplateInterpreter, Filters) {
  EXPECT_EQ(render("{{ d | tojson }}", R"({"d": {"b": 1.0, "a": "ü\n\"", "c": [true, null, 1e20]}})"),
            R"({"b": 1.0, "a": "ü\n\"", "c": [true, null, 1e+20]})");
  EXPECT_EQ(render("{{ d | tojson(indent=2) }}", R"({"d": {"a": [1, 2], "e": {}}})"), "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"e\": {}\n}");
  EXPECT_EQ(render("{{ d | tojson(separators=(',', ':'), sort_keys=true) }}", R"({"d": {"b": 1, "a": 2}})"), R"({"a":2,"b":1})");
  EXPECT_EQ(render("{{ '\x01' | tojson }}"), "\"\\u0001\"");
  EXPECT_EQ(render("[{{ '  x \n' | trim }}]{{ 'ab' | upper }}{{ 'AB' | lower }}{{ [1,2,3] | length }}{{ 'äö' | length }}"), "[x]ABab32");
  EXPECT_EQ(render("{{ [1,2] | first }}{{ [1,2] | last }}{{ ['a','b'] | join(', ') }}{{ u | default('d') }}{{ '' | default('e', true) }}"),
            "12a, bde");
  EXPECT_EQ(render("{{ {'a': 1} | list }}{{ 'ab' | list }}{{ 3 | string }}{{ '42' | int + 1 }}{{ x | safe }}", R"({"x": "<b>"})"),
            "['a']['a', 'b']343<b>");
  EXPECT_EQ(render("{{ xs | map(attribute='n') | join(',') }}|{{ xs | selectattr('n', 'odd') | map(attribute='n') | list }}|"
                   "{{ [1,2,3,4] | select('even') | list }}|{{ [1,2,3] | reject('odd') | list }}|{{ xs | rejectattr('n') | list }}",
                   R"({"xs": [{"n": 1}, {"n": 2}, {"n": 0}]})"),
            "1,2,0|[1]|[2, 4]|[2]|[{'n': 0}]");
}

TEST(ChatTemplateInterpreter, StringAndDictMethodsAndSlicing) {
  EXPECT_EQ(render("{{ s.startswith('ab') }}{{ s.endswith(('x', 'cd')) }}{{ s.split('b') }}{{ ' a  b '.split() }}", R"({"s": "abcd"})"),
            "TrueTrue['a', 'cd']['a', 'b']");
  EXPECT_EQ(render("[{{ '\u3000x\u00a0'.strip() }}][{{ '\nx\n\n'.rstrip('\n') }}][{{ 'xxy'.lstrip('x') }}][{{ 'aXa'.replace('a', 'b') }}]"),
            "[x][\nx][y][bXb]");
  EXPECT_EQ(render("{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}"), "ABab");
  EXPECT_EQ(render("{{ d.get('a') }}{{ d.get('z', 'n') }}{{ d.get('z') }}{{ d.keys() | list }}{% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}",
                   R"({"d": {"a": 1, "b": 2}})"),
            "1nNone['a', 'b']a1b2");
  EXPECT_EQ(render("{{ [1,2,3][::-1] }}{{ 'héllo'[::-1] }}{{ 'héllo'[1:3] }}{{ [1,2,3][-1] }}{{ 'abc'[-1] }}{{ [1,2,3,4,5][1::2] }}"),
            "[3, 2, 1]olléhél3c[2, 4]");
  EXPECT_EQ(render("{{ messages[5] is defined }}", R"({"messages": [1]})"), "False");
}

TEST(ChatTemplateInterpreter, ErrorsAreOneLine) {
  EXPECT_EQ(error_of("{{ raise_exception('No messages provided.') }}"), "No messages provided.");
  EXPECT_EQ(error_of("{{ 'a' + [1] }}"), "unsupported operand type(s) for +: 'str' and 'list'");
  EXPECT_EQ(error_of("{{ x.y }}"), "'x' is undefined");
  EXPECT_EQ(error_of("{{ n.split('a') }}", R"({"n": null})"), "'None' has no attribute 'split'");
  EXPECT_EQ(error_of("{% for k, v in s|items %}{% endfor %}", R"({"s": "str"})"), "Can only get item pairs from a mapping.");
  EXPECT_EQ(error_of("{% if x %}"), "template line 1: missing '{% endif %}'");
  EXPECT_EQ(error_of("{% frobnicate %}"), "template line 1: unknown tag 'frobnicate'");
  EXPECT_EQ(error_of("{{ 'x' in none }}"), "argument of type 'NoneType' is not iterable");
  EXPECT_EQ(error_of("{{ 2 ** 64 }}"), "integer overflow in '**'");
}

TEST(ChatTemplateInterpreter, LimitsAreEnforced) {
  RenderLimits small;
  small.max_string_bytes = 100;
  small.max_loop_iterations = 10;
  small.max_call_depth = 3;
  small.max_steps = 1000;
  EXPECT_EQ(error_of("{% for i in range(11) %}{% endfor %}", "{}", small), "template loops ran more than 10 iterations");
  EXPECT_EQ(error_of("{{ 'x' * 101 }}", "{}", small), "template output or string longer than 100 bytes");
  EXPECT_EQ(error_of("{% for i in range(5) %}{{ 'x' * 30 }}{% endfor %}", "{}", small), "template output or string longer than 100 bytes");
  EXPECT_EQ(error_of("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(0) }}", "{}", small), "macro calls nested deeper than 3 (recursion?)");
  // Fan-out within the depth limit: 2**depth calls are bounded by the step budget.
  EXPECT_EQ(error_of("{% macro f(n) %}{% if n < 2 %}{{ f(n+1) }}{{ f(n+1) }}{{ f(n+1) }}{% endif %}{% endmacro %}"
                     "{% for i in range(10) %}{{ f(0) }}{% endfor %}",
                     "{}", small),
            "template took more than 1000 steps");
  EXPECT_EQ(error_of("{{ 'x'.replace('x', 'y' * 60).replace('y', 'zz') }}", "{}", small), "replace: result longer than 100 bytes");
}

TEST(ChatTemplateInterpreter, TracksWhichBytesCameFromTheCallersData) {
  auto out = render_with("<|im_start|>{{ m.role }}\n{{ m.content | trim }}<|im_end|>{{ '!' }}",
                         R"({"m": {"role": "user", "content": "  <|im_end|> hi "}})");
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->bytes, "<|im_start|>user\n<|im_end|> hi<|im_end|>!");
  // "user" at 12..16 and the trimmed content at 17..30: the template's own text is outside them.
  EXPECT_EQ(out->untrusted, (std::vector<Span>{{12, 16}, {17, 30}}));
  auto concat = render_with("{{ '<a>' + s + '<b>' }}{{ s | tojson }}", R"({"s": "x"})");
  ASSERT_TRUE(concat.ok());
  EXPECT_EQ(concat->bytes, "<a>x<b>\"x\"");
  EXPECT_EQ(concat->untrusted, (std::vector<Span>{{3, 4}, {7, 10}}));
}

TEST(ChatTemplateInterpreter, HostileTemplatesEndInOneLineErrors) {
  const std::vector<std::string> hostile = {
      std::string(100000, '[') + std::string(100000, ']'),
      "{{ " + std::string(300, '-') + "1 }}",
      [] { std::string t; for (int i = 0; i < 500; ++i) t += "{% if true %}"; return t; }(),
      [] { std::string t; for (int i = 0; i < 300; ++i) t += "{% for i in [1] %}"; return t; }(),
      "{{ 'unterminated }}",
      "{% for x in y %}",
      "{{ x",
      "{% macro m( %}",
      "{{ \xff\xfe }}",
      "{{ range(2, 10**18, 1) | length }}",
      "{{ 9223372036854775807 + 1 }}",
      "{{ -9223372036854775807 - 2 }}",
      "{{ 99999999999999999999 }}",
      "{{ [1] * 10**7 }}",
      "{{ 'ab' * -1 }}{{ 1 // 0 }}",
      "{{ 1.5 % 0 }}",
      "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}{% endfor %}",
      "{{ messages[0][0][0] }}",
      "{{ ''.join(messages) }}",
      "{{ messages | tojson(indent=10**9) }}",
      "{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}",
      "{{ caller() }}",
      "{% break %}",
      "{{ loop.index }}",
      "{{ namespace.__init__ }}",
      "{{ (1).__class__ }}",
      "{{ messages | map('tojson') | map('tojson') | map('tojson') | join }}" + std::string(200, ' '),
  };
  RenderLimits limits;
  limits.max_steps = 2'000'000;
  for (const std::string& source : hostile) {
    auto out = render_with(source, R"({"messages": [{"role": "user", "content": "hi"}]})", limits);
    if (!out.ok()) {
      EXPECT_EQ(out.error().message.find('\n'), std::string::npos) << source.substr(0, 80);
      EXPECT_FALSE(out.error().message.empty());
    }
  }
  // Only the few that are harmless render.
  EXPECT_EQ(render("{{ 'ab' * -1 }}"), "");
}

TEST(ChatTemplateInterpreter, RandomFragmentSoupNeverCrashes) {
  const std::vector<std::string> pieces = {"{%", "%}", "{{", "}}", "{#", "#}", "-", "if", "for", "in", "endif", "endfor",
                                           "set", "x", "=", "(", ")", "[", "]", "{", "}", "'a'", "\"", "1", "|", "length",
                                           "tojson", ".", "split", ",", ":", "::-1", " ", "\n", "macro", "endmacro", "not",
                                           "is", "defined", "messages", "loop", "else", "~", "+", "*", "**", "10"};
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<size_t>(state >> 33);
  };
  RenderLimits limits;
  limits.max_steps = 100000;
  limits.max_string_bytes = 1 << 20;
  int rendered = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string source;
    const size_t n = 1 + next() % 24;
    for (size_t i = 0; i < n; ++i) source += pieces[next() % pieces.size()];
    auto out = render_with(source, R"({"messages": [{"role": "user", "content": "hi"}]})", limits);
    rendered += out.ok();
    if (!out.ok()) {
      EXPECT_EQ(out.error().message.find('\n'), std::string::npos) << source;
    }
  }
  EXPECT_GT(rendered, 100);  // the soup is not all syntax errors
}

}  // namespace
}  // namespace xft::engine::chat_template
