// Tool-calling histories parsed from OpenAI and Anthropic request bodies and rendered by
// the server's Jinja path produce the bytes Jinja2 produces (../shared/templates/render.py,
// transformers' environment, run as the oracle) for the shared tool-calling templates.
// The server hands tool-call arguments to templates as objects (as vLLM and llama.cpp
// do), so the oracle renders the conversations with their arguments as objects too.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "server/jinja_chat.h"
#include "server/request_parse.h"
#include "server/tool_request.h"

namespace hearth::server {
namespace {

using json = nlohmann::ordered_json;

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const std::string kDir = std::string(HEARTH_SHARED_DIR) + "/templates/";

// Jinja2's renders of `cases` (arguments as objects) by render.py; empty when python3
// has no jinja2.
json oracle(const std::string& template_name, const json& cases) {
  if (std::system("python3 -c 'import jinja2' >/dev/null 2>&1") != 0) return json();
  json with_objects = cases;
  for (auto& c : with_objects) {
    for (auto& m : c["messages"]) {
      if (!m.contains("tool_calls")) continue;
      for (auto& tc : m["tool_calls"]) {
        json& args = tc["function"]["arguments"];
        if (args.is_string()) args = json::parse(args.get<std::string>());
      }
    }
  }
  const auto path = std::filesystem::temp_directory_path() /
                    ("hearth_tool_cases_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << with_objects.dump();
  const std::string cmd = "python3 '" + kDir + "render.py' '" + kDir + template_name + ".jinja' '" +
                          path.string() + "'";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  std::filesystem::remove(path);
  return json::parse(out, nullptr, false);
}

// render.py's SPECIAL_TOKENS for the templates below.
std::pair<std::string, std::string> tokens_for(const std::string& name) {
  const std::pair<std::string, std::string> chatml{"", "<|im_end|>"};
  const std::pair<std::string, std::string> llama3{"<|begin_of_text|>", "<|eot_id|>"};
  const std::pair<std::string, std::string> deepseek{"<｜begin▁of▁sentence｜>",
                                                     "<｜end▁of▁sentence｜>"};
  const std::map<std::string, std::pair<std::string, std::string>> table = {
      {"llamacpp-qwen2.5-instruct", chatml},
      {"llamacpp-qwen3", chatml},
      {"vllm-chatml", chatml},
      {"vllm-hermes", {"<|begin_of_text|>", "<|im_end|>"}},
      {"llamacpp-llama-3.1-instruct", llama3},
      {"vllm-llama3.1-json", llama3},
      {"llamacpp-mistral-small-3.1", {"<s>", "</s>"}},
      {"llamacpp-deepseek-r1-distill-qwen", deepseek},
      {"vllm-deepseekr1", deepseek},
      {"llamacpp-glm-4.6", {"", "<|endoftext|>"}},
  };
  return table.at(name);
}

// A conversations.json case as an OpenAI chat body.
json openai_body(const json& c) {
  json body = {{"messages", c["messages"]}, {"max_tokens", 8}};
  if (c.contains("tools") && !c["tools"].is_null()) body["tools"] = c["tools"];
  if (c.contains("extra")) body["chat_template_kwargs"] = c["extra"];
  return body;
}

// The same conversation in Anthropic's shape: system on top, tool_use / tool_result
// blocks, thinking blocks for reasoning_content.
json anthropic_body(const json& c) {
  json body = {{"max_tokens", 8}, {"messages", json::array()}};
  if (c.contains("tools") && !c["tools"].is_null()) {
    body["tools"] = json::array();
    for (const auto& t : c["tools"]) {
      json tool = {{"name", t["function"]["name"]}, {"input_schema", t["function"]["parameters"]}};
      if (t["function"].contains("description")) tool["description"] = t["function"]["description"];
      body["tools"].push_back(tool);
    }
  }
  for (const auto& m : c["messages"]) {
    const std::string role = m["role"];
    if (role == "system") {
      body["system"] = m["content"];
    } else if (role == "tool") {
      json block = {
          {"type", "tool_result"}, {"tool_use_id", m["tool_call_id"]}, {"content", m["content"]}};
      auto& msgs = body["messages"];
      if (!msgs.empty() && msgs.back()["role"] == "user" && msgs.back()["content"].is_array())
        msgs.back()["content"].push_back(block);
      else
        msgs.push_back({{"role", "user"}, {"content", json::array({block})}});
    } else if (role == "assistant") {
      json blocks = json::array();
      if (m.contains("reasoning_content"))
        blocks.push_back({{"type", "thinking"}, {"thinking", m["reasoning_content"]}});
      if (m.contains("content") && m["content"].is_string())
        blocks.push_back({{"type", "text"}, {"text", m["content"]}});
      for (const auto& tc : m.value("tool_calls", json::array())) {
        json args = tc["function"]["arguments"];
        if (args.is_string()) args = json::parse(args.get<std::string>());
        blocks.push_back({{"type", "tool_use"},
                          {"id", tc["id"]},
                          {"name", tc["function"]["name"]},
                          {"input", args}});
      }
      body["messages"].push_back({{"role", "assistant"}, {"content", blocks}});
    } else {
      body["messages"].push_back({{"role", role}, {"content", m["content"]}});
    }
  }
  if (c.contains("extra")) body["chat_template_kwargs"] = c["extra"];
  return body;
}

const std::vector<std::string> kTemplates = {"llamacpp-qwen2.5-instruct",
                                             "vllm-hermes",
                                             "llamacpp-qwen3",
                                             "llamacpp-llama-3.1-instruct",
                                             "vllm-llama3.1-json",
                                             "llamacpp-mistral-small-3.1",
                                             "llamacpp-deepseek-r1-distill-qwen",
                                             "vllm-deepseekr1",
                                             "llamacpp-glm-4.6",
                                             "vllm-chatml"};
const std::vector<std::string> kCases = {
    "tools_available",      "parallel_tool_calls", "tool_call_dict_arguments_no_content",
    "tool_call_multi_step", "thinking_disabled",   "single_user"};

Result<RenderedChat> render(const std::string& tmpl, const std::pair<std::string, std::string>& tok,
                            const TextRequest& tr) {
  ChatRenderOptions options;
  if (!tr.tools.empty()) options.tools = tr.tools_json;
  options.kwargs = tr.template_kwargs;
  options.render.fixed_now = true;  // render.py's instant: 2024-07-26, a Friday
  options.render.now.tm_year = 2024 - 1900;
  options.render.now.tm_mon = 6;
  options.render.now.tm_mday = 26;
  options.render.now.tm_wday = 5;
  return render_jinja_chat(tmpl, tr.messages, {tok.first, tok.second, false}, options);
}

// The selected conversations of conversations.json (ordered: key order is part of the
// render), and Jinja2's renders of them per template.
struct Fixture {
  json cases = json::array();
  std::map<std::string, json> expected;
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture f;
    const std::string text = read(kDir + "conversations.json");
    if (text.empty()) return f;
    for (const json& c : json::parse(text))
      if (std::find(kCases.begin(), kCases.end(), c["name"]) != kCases.end()) f.cases.push_back(c);
    for (const std::string& name : kTemplates) f.expected[name] = oracle(name, f.cases);
    return f;
  }();
  return f;
}

// Parses each case as a request body (the raw text, as the routes get it), renders it,
// and compares with Jinja2 where Jinja2 rendered.
int compare(const std::vector<std::string>& templates, bool anthropic) {
  int compared = 0;
  for (const std::string& name : templates) {
    const json& expected = fixture().expected.at(name);
    const std::string tmpl = read(kDir + name + ".jinja");
    for (const json& c : fixture().cases) {
      const std::string case_name = c["name"];
      if (!expected.contains(case_name) || !expected[case_name].is_string()) continue;
      // Anthropic has no null content: an assistant turn of only tool_use blocks has
      // none, which a template may render differently from null.
      const bool has_null = std::any_of(
          c["messages"].begin(), c["messages"].end(),
          [](const json& m) { return m.contains("content") && m["content"].is_null(); });
      if (anthropic && has_null) continue;
      SCOPED_TRACE(name + " / " + case_name + (anthropic ? " (anthropic)" : " (openai)"));
      const std::string raw = (anthropic ? anthropic_body(c) : openai_body(c)).dump();
      TextRequest tr;
      const nlohmann::json body = nlohmann::json::parse(raw);
      auto e = anthropic ? parse_messages_request(body, tr) : parse_chat_request(body, tr);
      EXPECT_FALSE(e) << e->message;
      if (e) continue;
      keep_tool_key_order(raw, anthropic, tr);
      auto r = render(tmpl, tokens_for(name), tr);
      EXPECT_TRUE(r.ok()) << r.status().message();
      if (!r.ok()) continue;
      EXPECT_EQ(r->text, expected[case_name].get<std::string>());
      ++compared;
    }
  }
  return compared;
}

TEST(ToolRender, OpenAiHistoriesRenderAsJinja2Does) {
  if (fixture().cases.empty()) GTEST_SKIP() << "SKIPPED: ../shared/templates is absent";
  if (fixture().expected.at(kTemplates[0]).is_discarded() ||
      fixture().expected.at(kTemplates[0]).is_null())
    GTEST_SKIP() << "SKIPPED: python3-jinja2 is not installed (scripts/install-deps.sh)";
  EXPECT_GE(compare(kTemplates, false), 30);
}

TEST(ToolRender, AnthropicHistoriesRenderLikeTheOpenAiOnes) {
  if (fixture().cases.empty()) GTEST_SKIP() << "SKIPPED: ../shared/templates is absent";
  if (fixture().expected.at(kTemplates[0]).is_null())
    GTEST_SKIP() << "SKIPPED: python3-jinja2 is not installed (scripts/install-deps.sh)";
  EXPECT_GE(compare({"llamacpp-qwen2.5-instruct", "llamacpp-qwen3", "llamacpp-llama-3.1-instruct",
                     "llamacpp-glm-4.6"},
                    true),
            12);
}

TEST(ToolRender, RejectsMalformedToolFieldsNamingThem) {
  const json msgs = json::array({{{"role", "user"}, {"content", "hi"}}});
  auto error_param = [](const json& ordered, bool anthropic) -> std::string {
    TextRequest tr;
    const nlohmann::json body = nlohmann::json::parse(ordered.dump());
    auto e = anthropic ? parse_messages_request(body, tr) : parse_chat_request(body, tr);
    return e ? e->param : "(accepted)";
  };
  const json fn = {{"type", "function"}, {"function", {{"name", "f"}}}};
  EXPECT_EQ(error_param({{"messages", msgs}, {"tools", "x"}}, false), "tools");
  EXPECT_EQ(error_param({{"messages", msgs}, {"tools", {{{"type", "x"}}}}}, false),
            "tools[0].type");
  EXPECT_EQ(error_param({{"messages", msgs}, {"tools", {fn}}, {"tool_choice", "sometimes"}}, false),
            "tool_choice");
  EXPECT_EQ(error_param({{"messages", msgs},
                         {"tools", {fn}},
                         {"tool_choice", {{"type", "function"}, {"function", {{"name", "g"}}}}}},
                        false),
            "tool_choice.function.name");
  EXPECT_EQ(error_param({{"messages", msgs}, {"tool_choice", "required"}}, false), "tool_choice");
  EXPECT_EQ(error_param({{"messages", msgs}, {"parallel_tool_calls", 1}}, false),
            "parallel_tool_calls");
  EXPECT_EQ(error_param({{"messages", {{{"role", "tool"}, {"content", "x"}}}}}, false),
            "messages[0].tool_call_id");
  EXPECT_EQ(error_param({{"messages", msgs}, {"chat_template_kwargs", {{"messages", 1}}}}, false),
            "chat_template_kwargs.messages");
  EXPECT_EQ(error_param({{"messages", msgs}, {"thinking_budget_tokens", -1}}, false),
            "thinking_budget_tokens");
  EXPECT_EQ(error_param({{"messages", msgs}, {"tools", {fn}}, {"tool_choice", "required"}}, false),
            "(accepted)");
  // Anthropic
  const json a = {{"messages", msgs}, {"max_tokens", 100}};
  json t = a;
  t["tools"] = {{{"name", "f"}}};
  EXPECT_EQ(error_param(t, true), "tools[0].input_schema");
  t = a;
  t["tool_choice"] = {{"type", "any"}};
  EXPECT_EQ(error_param(t, true), "tool_choice");
  t = a;
  t["thinking"] = {{"type", "enabled"}, {"budget_tokens", 200}};
  EXPECT_EQ(error_param(t, true), "thinking.budget_tokens");
  t["thinking"] = {{"type", "enabled"}, {"budget_tokens", 50}};
  EXPECT_EQ(error_param(t, true), "(accepted)");
  t["messages"] = {{{"role", "user"}, {"content", {{{"type", "tool_use"}}}}}};
  EXPECT_EQ(error_param(t, true), "messages[0].content[0].type");
}

}  // namespace
}  // namespace hearth::server
