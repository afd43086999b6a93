// POST /v1/responses through the real server and runtime on the stub backend: the
// reply object, the stream's typed events in order, function tools (a call, its output
// sent back, the next turn), text.format json_schema under the grammar, reasoning
// items, the store (GET / DELETE, previous_response_id) and chaining served warm from
// the KV cache with the same output as the conversation sent cold; every refused field
// is a 400 naming it.
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "server/model_settings.h"
#include "stub_server.h"
#include "testing/json_schema_check.h"

namespace hearth::server {
namespace {

using nlohmann::json;

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
const std::string kTemplate =
    std::string(HEARTH_SHARED_DIR) + "/templates/llamacpp-qwen2.5-instruct.jinja";

const json kTool = {{"type", "function"},
                    {"name", "get_weather"},
                    {"description", "Weather of a city"},
                    {"parameters",
                     {{"type", "object"},
                      {"properties", {{"city", {{"type", "string"}}}}},
                      {"required", {"city"}}}}};
const std::string kCall =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

struct Event {
  std::string name;  // the `event:` line
  json data;
};

std::vector<Event> sse_events(const std::string& body) {
  std::vector<Event> out;
  std::istringstream in(body);
  std::string line, event;
  while (std::getline(in, line)) {
    if (line.rfind("event: ", 0) == 0) event = line.substr(7);
    if (line.rfind("data: ", 0) == 0) out.push_back({event, json::parse(line.substr(6))});
  }
  return out;
}

class ResponsesHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (read(kTemplate).empty()) GTEST_SKIP() << "SKIPPED: ../shared/templates is absent";
    ServerConfig config;
    runtime::ModelConfig m = default_model_config();
    m.id = "qwen";
    m.model_path = "qwen.gguf";
    m.n_seq_max = 1;
    m.n_ctx = 4096;
    m.chat_template = read(kTemplate);
    config.models.push_back(m);
    ASSERT_TRUE(server_.start(config).ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_.port());
    client_->set_read_timeout(20, 0);
  }
  void TearDown() override { server_.stop(); }

  std::pair<int, json> post(json body) {
    if (!body.contains("model")) body["model"] = "qwen";
    auto r = client_->Post("/v1/responses", body.dump(), "application/json");
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  std::vector<Event> stream(json body) {
    body["model"] = "qwen";
    body["stream"] = true;
    auto r = client_->Post("/v1/responses", body.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
    return r ? sse_events(r->body) : std::vector<Event>{};
  }
  // A 400 whose param names `field`.
  void expect_refused(const json& body, const std::string& field) {
    auto [status, j] = post(body);
    EXPECT_EQ(status, 400) << body << " -> " << j;
    EXPECT_EQ(j["error"]["param"], field) << body << " -> " << j;
  }

  testing::StubServer server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ResponsesHttpTest, ReplyObject) {
  server_.control().set_script("Paris is sunny.");
  auto [status, r] = post({{"input", "Weather?"},
                           {"temperature", 0.7},
                           {"instructions", "Be terse."},
                           {"metadata", {{"k", "v"}}},
                           {"user", "u1"}});
  ASSERT_EQ(status, 200) << r;
  EXPECT_EQ(r["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["status"], "completed");
  EXPECT_TRUE(r["incomplete_details"].is_null());
  EXPECT_EQ(r["model"], "qwen");
  EXPECT_GT(r["created_at"].get<int64_t>(), 1700000000);
  ASSERT_EQ(r["output"].size(), 1u) << r;
  const json& msg = r["output"][0];
  EXPECT_EQ(msg["type"], "message");
  EXPECT_EQ(msg["role"], "assistant");
  EXPECT_EQ(msg["status"], "completed");
  EXPECT_EQ(msg["content"][0]["type"], "output_text");
  EXPECT_EQ(msg["content"][0]["text"], "Paris is sunny.");
  EXPECT_EQ(r["output_text"], "Paris is sunny.");
  EXPECT_EQ(r["instructions"], "Be terse.");
  EXPECT_EQ(r["metadata"], (json{{"k", "v"}}));
  EXPECT_EQ(r["user"], "u1");
  EXPECT_EQ(r["temperature"], 0.7);
  const json& u = r["usage"];
  EXPECT_GT(u["input_tokens"].get<int64_t>(), 0);
  EXPECT_GE(u["output_tokens"].get<int64_t>(), 15);  // a token per byte on the stub
  EXPECT_EQ(u["total_tokens"],
            u["input_tokens"].get<int64_t>() + u["output_tokens"].get<int64_t>());
  EXPECT_TRUE(u["input_tokens_details"]["cached_tokens"].is_number());

  // max_output_tokens cuts it: incomplete, with the reason.
  auto [s2, cut] = post({{"input", "Weather?"}, {"max_output_tokens", 5}});
  ASSERT_EQ(s2, 200) << cut;
  EXPECT_EQ(cut["status"], "incomplete");
  EXPECT_EQ(cut["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(cut["output"][0]["status"], "incomplete");
  EXPECT_EQ(cut["output_text"], "Paris");
  EXPECT_EQ(cut["max_output_tokens"], 5);
}

TEST_F(ResponsesHttpTest, InputItemsRenderLikeChatMessages) {
  // The same conversation as Responses input items and as chat messages: same prompt.
  server_.control().set_script("ok");
  const json items = {
      {{"role", "developer"}, {"content", "Sys."}},
      {{"type", "message"},
       {"role", "user"},
       {"content", {{{"type", "input_text"}, {"text", "Hi"}}}}},
      {{"type", "message"},
       {"role", "assistant"},
       {"content", {{{"type", "output_text"}, {"text", "Hello"}, {"annotations", json::array()}}}}},
      {{"role", "user"}, {"content", "Bye"}}};
  auto [s1, r] = post({{"input", items}});
  ASSERT_EQ(s1, 200) << r;
  const json messages = {{{"role", "system"}, {"content", "Sys."}},
                         {{"role", "user"}, {"content", "Hi"}},
                         {{"role", "assistant"}, {"content", "Hello"}},
                         {{"role", "user"}, {"content", "Bye"}}};
  auto c =
      client_->Post("/v1/chat/completions", json{{"model", "qwen"}, {"messages", messages}}.dump(),
                    "application/json");
  ASSERT_TRUE(c && c->status == 200);
  EXPECT_EQ(r["usage"]["input_tokens"], json::parse(c->body)["usage"]["prompt_tokens"]);
  // `instructions` is the same as a leading system message.
  auto [s2, r2] = post({{"instructions", "Sys."}, {"input", json(items.begin() + 1, items.end())}});
  ASSERT_EQ(s2, 200) << r2;
  EXPECT_EQ(r2["usage"]["input_tokens"], r["usage"]["input_tokens"]);
}

TEST_F(ResponsesHttpTest, StreamEventsInOrder) {
  server_.control().set_script("Paris is sunny.");
  const std::vector<Event> events = stream({{"input", "Weather?"}});
  ASSERT_GE(events.size(), 9u);
  std::vector<std::string> names;
  std::string text;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].name, events[i].data["type"]);
    EXPECT_EQ(events[i].data["sequence_number"], i);
    if (events[i].name == "response.output_text.delta") {
      text += events[i].data["delta"].get<std::string>();
      EXPECT_EQ(events[i].data["output_index"], 0);
      EXPECT_EQ(events[i].data["content_index"], 0);
      continue;  // one or more
    }
    names.push_back(events[i].name);
  }
  EXPECT_EQ(text, "Paris is sunny.");
  const std::vector<std::string> expected = {
      "response.created",           "response.in_progress",
      "response.output_item.added", "response.content_part.added",
      "response.output_text.done",  "response.content_part.done",
      "response.output_item.done",  "response.completed"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(events.front().data["response"]["status"], "in_progress");
  const json& done = events.back().data["response"];
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "Paris is sunny.");
  EXPECT_EQ(done["output"][0]["id"], events[2].data["item"]["id"]);
  EXPECT_GE(done["usage"]["output_tokens"].get<int64_t>(), 15);
  // The stream stored the response as the reply does.
  auto g = client_->Get(("/v1/responses/" + done["id"].get<std::string>()).c_str());
  ASSERT_TRUE(g && g->status == 200);
  EXPECT_EQ(json::parse(g->body), done);
  // Cut short: response.incomplete.
  const std::vector<Event> cut = stream({{"input", "Weather?"}, {"max_output_tokens", 3}});
  ASSERT_FALSE(cut.empty());
  EXPECT_EQ(cut.back().name, "response.incomplete");
  EXPECT_EQ(cut.back().data["response"]["incomplete_details"]["reason"], "max_output_tokens");
}

// A generation that fails after the stream began ends it with response.failed.
TEST_F(ResponsesHttpTest, StreamFailureIsResponseFailed) {
  server_.control().set_script("Paris is sunny and warm today.");
  server_.control().fail_at_step = server_.control().steps.load() + 4;
  const std::vector<Event> events = stream({{"input", "Weather?"}});
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.front().name, "response.created");
  const Event& last = events.back();
  EXPECT_EQ(last.name, "response.failed");
  EXPECT_EQ(last.data["response"]["status"], "failed");
  EXPECT_FALSE(last.data["response"]["error"]["message"].get<std::string>().empty()) << last.data;
  EXPECT_EQ(last.data["sequence_number"], events.size() - 1);
}

TEST_F(ResponsesHttpTest, FunctionCallRoundTrip) {
  server_.control().set_script(kCall);
  auto [s1, r1] = post({{"input", "Weather in Paris?"}, {"tools", {kTool}}});
  ASSERT_EQ(s1, 200) << r1;
  ASSERT_EQ(r1["output"].size(), 1u) << r1;
  const json call = r1["output"][0];
  EXPECT_EQ(call["type"], "function_call");
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(call["call_id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["id"].get<std::string>().rfind("fc_", 0), 0u);
  EXPECT_EQ(json::parse(call["arguments"].get<std::string>()), (json{{"city", "Paris"}}));
  EXPECT_EQ(r1["output_text"], "");

  // Streamed: the call's item and its arguments events.
  const std::vector<Event> events = stream({{"input", "Weather in Paris?"}, {"tools", {kTool}}});
  std::vector<std::string> names;
  for (const Event& e : events) names.push_back(e.name);
  const std::vector<std::string> expected = {"response.created",
                                             "response.in_progress",
                                             "response.output_item.added",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.done",
                                             "response.output_item.done",
                                             "response.completed"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(events[2].data["item"]["name"], "get_weather");
  EXPECT_EQ(json::parse(events[4].data["arguments"].get<std::string>()), (json{{"city", "Paris"}}));

  // The output sent back: the next turn sees the result (chained and in full alike).
  server_.control().set_script("It is sunny.");
  const json result = {{"type", "function_call_output"},
                       {"call_id", call["call_id"]},
                       {"output", "{\"sky\": \"sunny\"}"}};
  auto [s2, chained] =
      post({{"previous_response_id", r1["id"]}, {"input", {result}}, {"tools", {kTool}}});
  ASSERT_EQ(s2, 200) << chained;
  EXPECT_EQ(chained["output_text"], "It is sunny.");
  EXPECT_EQ(chained["previous_response_id"], r1["id"]);
  json full_input = {{{"role", "user"}, {"content", "Weather in Paris?"}}, call, result};
  auto [s3, full] = post({{"input", full_input}, {"tools", {kTool}}});
  ASSERT_EQ(s3, 200) << full;
  EXPECT_EQ(full["usage"]["input_tokens"], chained["usage"]["input_tokens"]);
  EXPECT_GT(full["usage"]["input_tokens"].get<int64_t>(),
            r1["usage"]["input_tokens"].get<int64_t>() + 10);

  // tool_choice none leaves the text alone; a named choice must name a declared tool.
  server_.control().set_script(kCall);
  auto [s4, none] = post({{"input", "Weather?"}, {"tools", {kTool}}, {"tool_choice", "none"}});
  ASSERT_EQ(s4, 200) << none;
  EXPECT_EQ(none["output_text"], kCall);
  auto [s5, named] = post({{"input", "Weather?"},
                           {"tools", {kTool}},
                           {"tool_choice", {{"type", "function"}, {"name", "get_weather"}}}});
  ASSERT_EQ(s5, 200) << named;
  EXPECT_EQ(named["output"][0]["type"], "function_call");
}

TEST_F(ResponsesHttpTest, JsonSchemaFormatUnderTheGrammar) {
  const json schema = {{"type", "object"},
                       {"properties", {{"n", {{"type", "integer"}}}, {"s", {{"type", "string"}}}}},
                       {"required", {"n", "s"}},
                       {"additionalProperties", false}};
  for (int seed = 1; seed <= 3; ++seed) {
    auto [status, r] = post(
        {{"input", "Give JSON"},
         {"seed", seed},
         {"max_output_tokens", 400},
         {"text",
          {{"format",
            {{"type", "json_schema"}, {"name", "thing"}, {"schema", schema}, {"strict", true}}}}}});
    ASSERT_EQ(status, 200) << r;
    ASSERT_EQ(r["status"], "completed") << r;
    const json v = json::parse(r["output_text"].get<std::string>(), nullptr, false);
    ASSERT_FALSE(v.is_discarded()) << r["output_text"];
    EXPECT_EQ(hearth::testing::validate_json_schema(v, schema, schema), "") << v;
    EXPECT_EQ(r["text"]["format"]["name"], "thing");
  }
  auto [status, r] = post({{"input", "JSON"},
                           {"max_output_tokens", 300},
                           {"text", {{"format", {{"type", "json_object"}}}}}});
  ASSERT_EQ(status, 200) << r;
  EXPECT_TRUE(json::parse(r["output_text"].get<std::string>(), nullptr, false).is_object())
      << r["output_text"];
}

TEST_F(ResponsesHttpTest, ReasoningItem) {
  server_.control().set_script("<think>\nLet me see.\n</think>\n\nSunny.");
  auto [status, r] = post({{"input", "Weather?"}});
  ASSERT_EQ(status, 200) << r;
  ASSERT_EQ(r["output"].size(), 2u) << r;
  EXPECT_EQ(r["output"][0]["type"], "reasoning");
  EXPECT_EQ(r["output"][0]["summary"][0]["text"], "\nLet me see.\n");
  EXPECT_EQ(r["output"][1]["content"][0]["text"], "Sunny.");
  EXPECT_EQ(r["output_text"], "Sunny.");
  const std::vector<Event> events = stream({{"input", "Weather?"}});
  std::string reasoning;
  for (const Event& e : events)
    if (e.name == "response.reasoning_summary_text.delta") reasoning += e.data["delta"];
  EXPECT_EQ(reasoning, "\nLet me see.\n");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().data["response"]["output"].size(), 2u);
  // reasoning.effort none turns the template's thinking off; other levels are refused.
  auto [s2, off] = post({{"input", "Weather?"}, {"reasoning", {{"effort", "none"}}}});
  EXPECT_EQ(s2, 200) << off;
  EXPECT_EQ(off["reasoning"]["effort"], "none");
}

TEST_F(ResponsesHttpTest, ChainingIsServedWarmAndEqualsCold) {
  auto [s1, first] =
      post({{"input", "Tell me a story."}, {"max_output_tokens", 24}, {"temperature", 0}});
  ASSERT_EQ(s1, 200) << first;
  auto [s2, warm] = post({{"previous_response_id", first["id"]},
                          {"input", "And then?"},
                          {"max_output_tokens", 24},
                          {"temperature", 0}});
  ASSERT_EQ(s2, 200) << warm;
  const json& wu = warm["usage"];
  EXPECT_GT(wu["input_tokens_details"]["cached_tokens"].get<int64_t>(),
            first["usage"]["input_tokens"].get<int64_t>())
      << warm;
  EXPECT_NE(wu["hearth"]["cache_hit"], "cold") << warm;
  // The same conversation in full, without the cache: the same prompt and output.
  const json full = {{{"role", "user"}, {"content", "Tell me a story."}},
                     first["output"][0],
                     {{"role", "user"}, {"content", "And then?"}}};
  auto [s3, cold] = post(
      {{"input", full}, {"max_output_tokens", 24}, {"temperature", 0}, {"cache_prompt", false}});
  ASSERT_EQ(s3, 200) << cold;
  EXPECT_EQ(cold["usage"]["input_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(cold["usage"]["input_tokens"], wu["input_tokens"]);
  EXPECT_EQ(cold["output_text"], warm["output_text"]);
  EXPECT_FALSE(warm["output_text"].get<std::string>().empty());
  // A third turn chains through both.
  auto [s4, third] = post({{"previous_response_id", warm["id"]},
                           {"input", "The end?"},
                           {"max_output_tokens", 4},
                           {"temperature", 0}});
  ASSERT_EQ(s4, 200) << third;
  EXPECT_GT(third["usage"]["input_tokens_details"]["cached_tokens"].get<int64_t>(),
            wu["input_tokens"].get<int64_t>());
}

// An item_reference input item stands for the stored output item it names.
TEST_F(ResponsesHttpTest, ItemReferencesResolveToStoredItems) {
  server_.control().set_script("Once upon a time.");
  auto [s1, first] = post({{"input", "Tell me."}});
  ASSERT_EQ(s1, 200) << first;
  server_.control().set_script("The end.");
  auto [s2, chained] = post({{"previous_response_id", first["id"]}, {"input", "More."}});
  ASSERT_EQ(s2, 200) << chained;
  const json by_reference = {{{"role", "user"}, {"content", "Tell me."}},
                             {{"type", "item_reference"}, {"id", first["output"][0]["id"]}},
                             {{"role", "user"}, {"content", "More."}}};
  auto [s3, referenced] = post({{"input", by_reference}});
  ASSERT_EQ(s3, 200) << referenced;
  EXPECT_EQ(referenced["usage"]["input_tokens"], chained["usage"]["input_tokens"]);
  EXPECT_EQ(referenced["output_text"], "The end.");
  expect_refused({{"input", {{{"type", "item_reference"}, {"id", "msg_none"}}}}}, "input[0].id");
  // A deleted response's items go with it.
  ASSERT_EQ(client_->Delete(("/v1/responses/" + first["id"].get<std::string>()).c_str())->status,
            200);
  expect_refused({{"input", by_reference}}, "input[1].id");
}

TEST_F(ResponsesHttpTest, StoreGetDelete) {
  server_.control().set_script("ok");
  auto [s1, r] = post({{"input", "hi"}});
  ASSERT_EQ(s1, 200);
  const std::string path = "/v1/responses/" + r["id"].get<std::string>();
  auto g = client_->Get(path.c_str());
  ASSERT_TRUE(g && g->status == 200);
  EXPECT_EQ(json::parse(g->body), r);
  auto q = client_->Get((path + "?include=x").c_str());
  ASSERT_TRUE(q);
  EXPECT_EQ(q->status, 400);
  auto d = client_->Delete(path.c_str());
  ASSERT_TRUE(d && d->status == 200) << (d ? d->body : "");
  EXPECT_EQ(json::parse(d->body)["deleted"], true);
  g = client_->Get(path.c_str());
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 404);
  EXPECT_EQ(client_->Delete(path.c_str())->status, 404);
  auto [s2, gone] = post({{"input", "hi"}, {"previous_response_id", r["id"]}});
  EXPECT_EQ(s2, 404) << gone;
  EXPECT_EQ(gone["error"]["code"], "previous_response_not_found");
  EXPECT_EQ(gone["error"]["param"], "previous_response_id");
  EXPECT_NE(gone["error"]["message"].get<std::string>().find(r["id"].get<std::string>()),
            std::string::npos);
  // store: false keeps nothing.
  auto [s3, unstored] = post({{"input", "hi"}, {"store", false}});
  ASSERT_EQ(s3, 200);
  EXPECT_EQ(unstored["store"], false);
  EXPECT_EQ(client_->Get(("/v1/responses/" + unstored["id"].get<std::string>()).c_str())->status,
            404);
}

TEST_F(ResponsesHttpTest, RefusedFieldsAreNamed) {
  expect_refused({{"input", "hi"}, {"tools", {{{"type", "web_search"}}}}}, "tools");
  expect_refused({{"input", "hi"}, {"tools", {{{"type", "function"}, {"name", "a b"}}}}},
                 "tools[0].name");
  expect_refused({{"input", "hi"},
                  {"tools", {kTool}},
                  {"tool_choice", {{"type", "function"}, {"name", "nope"}}}},
                 "tool_choice.name");
  expect_refused({{"input", "hi"}, {"tool_choice", {{"type", "web_search_preview"}}}},
                 "tool_choice.type");
  expect_refused({{"input", "hi"}, {"text", {{"format", {{"type", "xml"}}}}}}, "text.format.type");
  expect_refused({{"input", "hi"},
                  {"text", {{"format", {{"type", "json_schema"}, {"schema", "not a schema"}}}}}},
                 "text.format.schema");
  expect_refused({{"input", "hi"}, {"text", {{"verbosity", "low"}}}}, "text.verbosity");
  expect_refused({{"input", "hi"}, {"max_output_tokens", 0}}, "max_output_tokens");
  expect_refused({{"input", "hi"}, {"max_output_tokens", 100000000}}, "max_output_tokens");
  expect_refused({{"input", "hi"}, {"max_tokens", 5}}, "max_tokens");
  expect_refused({{"input", "hi"}, {"reasoning", {{"effort", "low"}}}}, "reasoning.effort");
  expect_refused({{"input", "hi"}, {"truncation", "auto"}}, "truncation");
  expect_refused({{"input", "hi"}, {"include", {"reasoning.encrypted_content"}}}, "include");
  expect_refused({{"input", "hi"}, {"background", true}}, "background");
  expect_refused({{"input", "hi"}, {"conversation", "c1"}}, "conversation");
  expect_refused({{"input", "hi"}, {"temperature", 3}}, "temperature");
  expect_refused({{"input", 5}}, "input");
  expect_refused(json::object(), "input");
  expect_refused({{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}}}}}}}},
                 "input[0].content[0].type");
  expect_refused({{"input", {{{"role", "tool"}, {"content", "x"}}}}}, "input[0].role");
  expect_refused({{"input", {{{"type", "computer_call_output"}, {"id", "x"}}}}}, "input[0].type");
  expect_refused({{"input", {{{"type", "function_call_output"}, {"output", "x"}}}}},
                 "input[0].call_id");
}

}  // namespace
}  // namespace hearth::server
