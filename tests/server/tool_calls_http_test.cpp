// Tool calls and reasoning through the real server and runtime: one stub model per
// tool-call family, each with its real chat template from ../shared/templates (the
// per-model chat_template override) and a canned reply in the family's syntax
// (StubControl::set_script); both APIs, streaming and not.
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "server/model_settings.h"
#include "stub_server.h"

namespace hearth::server {
namespace {

using nlohmann::json;

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
const std::string kDir = std::string(HEARTH_SHARED_DIR) + "/templates/";

struct Family {
  std::string model;      // model id
  std::string tmpl;       // shared template name ("" = none: the built-in fallback)
  std::string script;     // the canned reply
  std::string reasoning;  // the reasoning the reply carries
};

const std::string kArgs = "{\"city\": \"Paris\"}";
const std::vector<Family> kFamilies = {
    {"hermes", "llamacpp-qwen2.5-instruct",
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + kArgs + "}\n</tool_call>", ""},
    {"llama3", "llamacpp-llama-3.1-instruct",
     "{\"name\": \"get_weather\", \"parameters\": " + kArgs + "}", ""},
    {"mistral", "llamacpp-mistral-small-3.1",
     "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": " + kArgs + "}]", ""},
    {"deepseek", "vllm-deepseekr1",
     "<think>\nNeed "
     "weather.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
     "get_weather\n```json\n" +
         kArgs + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
     "\nNeed weather.\n"},
    {"phi4", "vllm-phi4-mini",
     "functools[{\"name\": \"get_weather\", \"arguments\": " + kArgs + "}]", ""},
    {"pythonic", "vllm-gemma3-pythonic", "[get_weather(city=\"Paris\")]", ""},
    {"glm", "llamacpp-glm-4.6",
     "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
     ""},
};

const json kTool = {{"type", "function"},
                    {"function",
                     {{"name", "get_weather"},
                      {"description", "Weather of a city"},
                      {"parameters",
                       {{"type", "object"},
                        {"properties", {{"city", {{"type", "string"}}}}},
                        {"required", {"city"}}}}}}};
const json kAnthropicTool = {{"name", "get_weather"},
                             {"description", "Weather of a city"},
                             {"input_schema", kTool["function"]["parameters"]}};

// What a reply said, whatever its shape.
struct Reply {
  int status = 0;
  std::string content, reasoning, finish;
  std::vector<std::string> ids, names, args;  // args: JSON text
  std::string body;
};

std::vector<std::pair<std::string, json>> sse_events(const std::string& body) {
  std::vector<std::pair<std::string, json>> out;
  std::istringstream in(body);
  std::string line, event;
  while (std::getline(in, line)) {
    if (line.rfind("event: ", 0) == 0) event = line.substr(7);
    if (line.rfind("data: ", 0) != 0 || line == "data: [DONE]") continue;
    out.emplace_back(event, json::parse(line.substr(6)));
  }
  return out;
}

Reply read_openai(const httplib::Result& r, bool stream) {
  Reply out;
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  if (r->status != 200) return out;
  if (!stream) {
    const json j = json::parse(r->body);
    const json& m = j["choices"][0]["message"];
    out.content = m["content"].is_string() ? m["content"].get<std::string>() : "";
    out.reasoning = m.value("reasoning_content", "");
    out.finish = j["choices"][0]["finish_reason"];
    for (const auto& c : m.value("tool_calls", json::array())) {
      out.ids.push_back(c["id"]);
      out.names.push_back(c["function"]["name"]);
      out.args.push_back(c["function"]["arguments"]);
    }
    return out;
  }
  for (const auto& [event, j] : sse_events(r->body)) {
    if (j["choices"].empty()) continue;
    const json& ch = j["choices"][0];
    if (ch["finish_reason"].is_string()) out.finish = ch["finish_reason"];
    const json& d = ch["delta"];
    if (d.contains("content") && d["content"].is_string()) out.content += d["content"];
    if (d.contains("reasoning_content")) out.reasoning += d["reasoning_content"];
    for (const auto& tc : d.value("tool_calls", json::array())) {
      const size_t i = tc["index"];
      if (tc.contains("id")) {  // the first chunk of a call: id and name, no arguments yet
        EXPECT_EQ(i, out.ids.size());
        out.ids.push_back(tc["id"]);
        out.names.push_back(tc["function"]["name"]);
        out.args.push_back(tc["function"]["arguments"]);
        EXPECT_EQ(out.args.back(), "");
      } else {
        out.args.at(i) += tc["function"]["arguments"].get<std::string>();
      }
    }
  }
  return out;
}

Reply read_anthropic(const httplib::Result& r, bool stream) {
  Reply out;
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  if (r->status != 200) return out;
  if (!stream) {
    const json j = json::parse(r->body);
    out.finish = j["stop_reason"];
    for (const auto& b : j["content"]) {
      if (b["type"] == "text") out.content += b["text"];
      if (b["type"] == "thinking") out.reasoning += b["thinking"];
      if (b["type"] == "tool_use") {
        out.ids.push_back(b["id"]);
        out.names.push_back(b["name"]);
        out.args.push_back(b["input"].dump());
      }
    }
    return out;
  }
  std::map<int, std::string> kind;
  std::map<int, size_t> call_of;
  for (const auto& [event, j] : sse_events(r->body)) {
    EXPECT_EQ(event, j["type"]);
    if (event == "content_block_start") {
      kind[j["index"]] = j["content_block"]["type"];
      if (j["content_block"]["type"] == "tool_use") {
        call_of[j["index"]] = out.ids.size();
        out.ids.push_back(j["content_block"]["id"]);
        out.names.push_back(j["content_block"]["name"]);
        out.args.emplace_back();
      }
    } else if (event == "content_block_delta") {
      const json& d = j["delta"];
      if (d["type"] == "text_delta") out.content += d["text"];
      if (d["type"] == "thinking_delta") out.reasoning += d["thinking"];
      if (d["type"] == "input_json_delta") out.args.at(call_of.at(j["index"])) += d["partial_json"];
    } else if (event == "message_delta") {
      out.finish = j["delta"]["stop_reason"];
    }
  }
  return out;
}

class ToolCallsHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (read(kDir + "conversations.json").empty())
      GTEST_SKIP() << "SKIPPED: ../shared/templates is absent";
    ServerConfig config;
    auto add = [&](const std::string& id, const std::string& tmpl) {
      runtime::ModelConfig m = default_model_config();
      m.id = id;
      m.model_path = id + ".gguf";
      m.n_seq_max = 1;
      m.n_ctx = 4096;
      if (!tmpl.empty()) m.chat_template = read(kDir + tmpl + ".jinja");
      config.models.push_back(m);
    };
    for (const Family& f : kFamilies) add(f.model, f.tmpl);
    add("chatml", "vllm-chatml");                           // a template that never reads `tools`
    add("r1distill", "llamacpp-deepseek-r1-distill-qwen");  // opens <think> in the prompt
    add("plain", "");                                       // no template: the built-in fallback
    ASSERT_TRUE(server_.start(config).ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_.port());
    client_->set_read_timeout(20, 0);
  }
  void TearDown() override { server_.stop(); }

  Reply openai(const std::string& model, bool stream, json extra = json::object()) {
    json body = {{"model", model},
                 {"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
                 {"tools", {kTool}},
                 {"max_tokens", 400},
                 {"stream", stream}};
    for (auto& [k, v] : extra.items()) body[k] = v;
    return read_openai(client_->Post("/v1/chat/completions", body.dump(), "application/json"),
                       stream);
  }
  Reply anthropic(const std::string& model, bool stream, json extra = json::object()) {
    json body = {{"model", model},
                 {"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
                 {"tools", {kAnthropicTool}},
                 {"max_tokens", 400},
                 {"stream", stream}};
    for (auto& [k, v] : extra.items()) body[k] = v;
    return read_anthropic(client_->Post("/v1/messages", body.dump(), "application/json"), stream);
  }

  testing::StubServer server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ToolCallsHttpTest, EveryFamilyBothApisStreamAndNot) {
  for (const Family& f : kFamilies) {
    server_.control().set_script(f.script);
    for (bool stream : {false, true}) {
      for (bool is_openai : {true, false}) {
        SCOPED_TRACE(f.model + (stream ? " stream" : " whole") +
                     (is_openai ? " openai" : " anthropic"));
        const Reply r = is_openai ? openai(f.model, stream) : anthropic(f.model, stream);
        ASSERT_EQ(r.status, 200) << r.body;
        ASSERT_EQ(r.names.size(), 1u) << r.body;
        EXPECT_EQ(r.names[0], "get_weather");
        EXPECT_EQ(json::parse(r.args[0]), json::parse(kArgs));
        EXPECT_EQ(r.ids[0].rfind(is_openai ? "call_" : "toolu_", 0), 0u) << r.ids[0];
        EXPECT_EQ(r.finish, is_openai ? "tool_calls" : "tool_use");
        EXPECT_EQ(r.content, "");
        EXPECT_EQ(r.reasoning, f.reasoning);
      }
    }
  }
}

TEST_F(ToolCallsHttpTest, ToolChoiceNoneLeavesTheTextAlone) {
  server_.control().set_script(kFamilies[0].script);
  for (bool stream : {false, true}) {
    const Reply r = openai("hermes", stream, {{"tool_choice", "none"}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(r.names.empty());
    EXPECT_EQ(r.content, kFamilies[0].script);
    EXPECT_EQ(r.finish, "stop");
    const Reply a = anthropic("hermes", stream, {{"tool_choice", {{"type", "none"}}}});
    EXPECT_TRUE(a.names.empty());
    EXPECT_EQ(a.content, kFamilies[0].script);
    EXPECT_EQ(a.finish, "end_turn");
  }
}

// With tools declared, calls are sampled under the tool-call grammar (lazy from the
// family's trigger), so a model that starts a call cannot break it: the stub's scripted
// broken call comes out as a call that parses. (Text that does not parse is returned
// as content by the output parser: tests/server/output/output_parser_test.cpp.)
TEST_F(ToolCallsHttpTest, AStartedCallIsCompletedUnderTheToolGrammar) {
  const std::string broken =
      "Here: <tool_call>{\"name\": \"get_weather\", \"arguments\": {</tool_call>";
  server_.control().set_script(broken);
  for (bool stream : {false, true}) {
    const Reply r = openai("hermes", stream);
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_FALSE(r.names.empty()) << r.body;
    ASSERT_EQ(r.args.size(), r.names.size());
    for (const std::string& a : r.args) EXPECT_TRUE(json::accept(a)) << a;
    // The stub writes calls until max_tokens cuts the reply: "length", not "tool_calls".
    EXPECT_EQ(r.finish, "length");
  }
}

// A reply cut by max_tokens inside its second call (what the Vercel AI SDK saw from a
// random-weight model under tool_choice required): the finished call is a call, the cut
// one stays content, byte for byte and without the blank between them, the same
// streamed or not; the finish reason says the limit cut it.
TEST_F(ToolCallsHttpTest, ACallCutByMaxTokensIsLengthAndContent) {
  const std::string call = kFamilies[0].script;  // a whole hermes call
  server_.control().set_script(call + " \n" + call);
  const size_t cut = call.size() + 2 + 12;  // the stub writes about one byte per token
  std::vector<std::string> contents;
  for (bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "stream" : "whole");
    const Reply r = openai("hermes", stream, {{"max_tokens", cut}});
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_EQ(r.names.size(), 1u) << r.body;
    EXPECT_EQ(json::parse(r.args[0]), json::parse(kArgs));
    EXPECT_EQ(r.finish, "length");
    const Reply a = anthropic("hermes", stream, {{"max_tokens", cut}});
    ASSERT_EQ(a.status, 200) << a.body;
    ASSERT_EQ(a.names.size(), 1u) << a.body;
    EXPECT_EQ(a.finish, "max_tokens");
    for (const std::string& c : {r.content, a.content}) {
      // The start of the cut call, from its marker: no blank before it.
      EXPECT_EQ(c.rfind("<tool_call>", 0), 0u) << c;
      EXPECT_LT(c.size(), call.size());
      EXPECT_EQ(call.rfind(c, 0), 0u) << c;
      contents.push_back(c);
    }
  }
  for (const std::string& c : contents) EXPECT_EQ(c, contents[0]);
}

TEST_F(ToolCallsHttpTest, ReasoningSplitStreamAndNot) {
  server_.control().set_script("<think>\nLet me see.\n</think>\n\nParis is sunny.");
  for (bool stream : {false, true}) {
    const Reply r = openai("hermes", stream, {{"tools", json::array()}});
    EXPECT_EQ(r.reasoning, "\nLet me see.\n");
    EXPECT_EQ(r.content, "Paris is sunny.");
    const Reply a = anthropic("hermes", stream, {{"tools", json::array()}});
    EXPECT_EQ(a.reasoning, "\nLet me see.\n");
    EXPECT_EQ(a.content, "Paris is sunny.");
    EXPECT_EQ(a.finish, "end_turn");
  }
}

TEST_F(ToolCallsHttpTest, ThinkingBudgetClosesTheBlock) {
  // The R1 distills' generation prompt opens <think>: after N tokens the runtime closes it.
  server_.control().set_script("Need to think this through.\n</think>\n\nIt is 4.");
  const Reply free = openai("r1distill", false, {{"tools", json::array()}});
  ASSERT_EQ(free.status, 200) << free.body;
  EXPECT_EQ(free.reasoning, "Need to think this through.\n");
  EXPECT_EQ(free.content, "It is 4.");
  const Reply r =
      openai("r1distill", false, {{"tools", json::array()}, {"thinking_budget_tokens", 3}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.reasoning, "Nee");  // the stub writes one byte per token
  const Reply a = anthropic(
      "r1distill", true,
      {{"tools", json::array()}, {"thinking", {{"type", "enabled"}, {"budget_tokens", 5}}}});
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.reasoning, "Need ");
}

TEST_F(ToolCallsHttpTest, TemplatesThatCannotExpressToolsAre400) {
  for (const std::string model : {"chatml", "plain"}) {
    auto r = client_->Post("/v1/chat/completions",
                           json{{"model", model},
                                {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                {"tools", {kTool}}}
                               .dump(),
                           "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(json::parse(r->body)["error"]["param"], "tools") << model;
  }
  auto r = client_->Post("/v1/chat/completions",
                         json{{"model", "plain"},
                              {"messages",
                               {{{"role", "user"}, {"content", "hi"}},
                                {{"role", "assistant"},
                                 {"content", nullptr},
                                 {"tool_calls",
                                  {{{"id", "c1"},
                                    {"type", "function"},
                                    {"function", {{"name", "f"}, {"arguments", "{}"}}}}}}}}}}
                             .dump(),
                         "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "messages[1]");
}

// A tool-calling history renders through the model's template as Jinja2 renders it: the
// stub counts one token per byte, so the prompt size is the render's length.
TEST_F(ToolCallsHttpTest, ToolHistoryRendersThroughTheTemplate) {
  using ordered = nlohmann::ordered_json;
  const ordered conversations = ordered::parse(read(kDir + "conversations.json"));
  const ordered expected = ordered::parse(read(kDir + "expected/llamacpp-qwen2.5-instruct.json"));
  server_.control().set_script("ok");
  for (const ordered& c : conversations) {
    if (c["name"] != "tool_call_multi_step") continue;  // its arguments are objects already
    auto r = client_->Post("/v1/chat/completions",
                           ordered{{"model", "hermes"},
                                   {"messages", c["messages"]},
                                   {"tools", c["tools"]},
                                   {"max_tokens", 4}}
                               .dump(),
                           "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)["usage"]["prompt_tokens"],
              expected[c["name"].get<std::string>()].get<std::string>().size())
        << c["name"];
  }
}

}  // namespace
}  // namespace hearth::server
