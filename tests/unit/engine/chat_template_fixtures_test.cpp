// Every case of ../shared/fixtures/chat-templates.json (copied to tests/data):
// real Qwen templates rendered by Python's jinja2 as Hugging Face's
// apply_chat_template does; ours must give the same bytes, fail where jinja2
// failed, and refuse every sandbox case within its limits.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/chat_template/json_value.h"
#include "engine/chat_template/template.h"
#include "tests/unit/support/test_paths.h"

namespace xft::engine::chat_template {
namespace {

using ojson = nlohmann::ordered_json;

const ojson& fixtures() {
  static const ojson data = [] {
    std::ifstream in(xft::test::data_dir() + "/chat-templates.json");
    std::stringstream text;
    text << in.rdbuf();
    return ojson::parse(text.str());
  }();
  return data;
}

// What transformers passes: messages, tools (None when absent or empty),
// documents=None, add_generation_prompt, then the case's kwargs.
Dict context_of(const ojson& c) {
  Dict d;
  d.set("messages", value_from_json(c["messages"], true));
  const bool has_tools = c.contains("tools") && !c["tools"].is_null() && !c["tools"].empty();
  d.set("tools", has_tools ? value_from_json(c["tools"], true) : Value::none());
  d.set("documents", Value::none());
  d.set("add_generation_prompt", Value::from_bool(c.value("add_generation_prompt", false)));
  if (c.contains("kwargs"))
    for (const auto& [k, v] : c["kwargs"].items()) d.set(k, value_from_json(v, true));
  return d;
}

TEST(ChatTemplateFixtures, EveryCaseRendersAsJinja2) {
  std::map<std::string, std::string> sources;
  for (const auto& t : fixtures()["templates"]) sources[t["name"].get<std::string>()] = t["template"].get<std::string>();
  size_t checked = 0;
  for (const auto& c : fixtures()["cases"]) {
    const std::string label = c["template"].get<std::string>() + "/" + c["name"].get<std::string>();
    auto tmpl = Template::parse(sources.at(c["template"].get<std::string>()));
    ASSERT_TRUE(tmpl.ok()) << label << ": " << tmpl.error().message;
    auto out = tmpl->render(context_of(c));
    if (c["expected"].is_null()) {
      EXPECT_FALSE(out.ok()) << label << ": jinja2 failed (" << c["error"]["message"] << ") but we rendered\n"
                             << (out.ok() ? out->bytes : "");
    } else {
      ASSERT_TRUE(out.ok()) << label << ": " << out.error().message;
      EXPECT_EQ(out->bytes, c["expected"].get<std::string>()) << label;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 215u);
}

TEST(ChatTemplateFixtures, EverySandboxCaseIsRefused) {
  size_t checked = 0;
  for (const auto& c : fixtures()["sandbox_cases"]) {
    const std::string label = c["name"].get<std::string>();
    auto tmpl = Template::parse(c["template"].get<std::string>());
    if (!tmpl.ok()) {
      EXPECT_NE(tmpl.error().message.find('\n'), 0u);
      ++checked;
      continue;
    }
    auto out = tmpl->render(context_of(c));
    EXPECT_FALSE(out.ok()) << label << " rendered " << (out.ok() ? out->bytes.size() : 0) << " bytes";
    if (!out.ok()) {
      EXPECT_EQ(out.error().message.find('\n'), std::string::npos) << label << ": one line";
    }
    ++checked;
  }
  EXPECT_EQ(checked, fixtures()["sandbox_cases"].size());
  EXPECT_GE(checked, 10u);
}

}  // namespace
}  // namespace xft::engine::chat_template
