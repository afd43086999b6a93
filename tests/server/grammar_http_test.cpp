// Constrained output over HTTP: the real server and runtime on stories260K.
// response_format json_schema returns JSON that validates, `grammar` (GBNF) shapes
// completions, and a bad grammar, schema or response_format is a 400 naming the field.
#include <httplib.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "hearth/grammar/grammar.h"
#include "server/http_server.h"
#include "server/runtime_service.h"
#include "stub_server.h"
#include "testing/json_schema_check.h"

namespace hearth::server {
namespace {

using nlohmann::json;

std::string stories_path() {
  return std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";
}

class GrammarHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(stories_path())) GTEST_SKIP() << "SKIPPED: stories260K absent";
    config_.port = 0;
    runtime::ModelConfig m;
    m.id = "stories";
    m.model_path = stories_path();
    m.n_ctx = 512;
    m.n_seq_max = 2;
    config_.models.push_back(m);
    const Status started = server_.start_engine(config_);
    ASSERT_TRUE(started.ok()) << started.to_string();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_.port());
    client_->set_read_timeout(60, 0);
  }
  void TearDown() override { server_.stop(); }
  std::pair<int, json> post(const std::string& path, const json& body) {
    auto r = client_->Post(path.c_str(), body.dump(), "application/json");
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }

  ServerConfig config_;
  testing::StubServer server_;  // on the real engine backend (start_engine)
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(GrammarHttpTest, JsonSchemaResponseFormatReturnsValidJson) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "answer": {"enum": ["yes", "no"]},
      "count": {"type": "integer", "minimum": 0, "maximum": 99},
      "note": {"type": "string", "maxLength": 12}},
    "required": ["answer", "count", "note"], "additionalProperties": false})");
  for (int seed = 0; seed < 5; ++seed) {
    auto [status, reply] =
        post("/v1/chat/completions",
             {{"model", "stories"},
              {"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
              {"seed", seed},
              {"max_tokens", 300},
              {"response_format",
               {{"type", "json_schema"},
                {"json_schema", {{"name", "reply"}, {"strict", true}, {"schema", schema}}}}}});
    ASSERT_EQ(status, 200) << reply.dump();
    const auto& choice = reply["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "stop");
    const std::string content = choice["message"]["content"].get<std::string>();
    const json parsed = json::parse(content, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << content;
    EXPECT_EQ(hearth::testing::validate_json_schema(parsed, schema, schema), "") << content;
  }
  // json_object: any JSON object.
  auto [status, reply] =
      post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                                    {"seed", 1},
                                    {"max_tokens", 400},
                                    {"temperature", 0},
                                    {"response_format", {{"type", "json_object"}}}});
  ASSERT_EQ(status, 200) << reply.dump();
  const std::string content = reply["choices"][0]["message"]["content"].get<std::string>();
  EXPECT_EQ(content.front(), '{') << content;
  if (reply["choices"][0]["finish_reason"] == "stop") {
    EXPECT_TRUE(json::parse(content, nullptr, false).is_object()) << content;
  }
}

TEST_F(GrammarHttpTest, GrammarFieldShapesCompletions) {
  const std::string gbnf = "root ::= (\"Lily\" | \"Tom\") \" is \" [0-9]{1,2} \".\"";
  for (int seed = 0; seed < 5; ++seed) {
    auto [status, reply] = post(
        "/v1/completions",
        {{"prompt", "Once upon a time"}, {"seed", seed}, {"max_tokens", 40}, {"grammar", gbnf}});
    ASSERT_EQ(status, 200) << reply.dump();
    const std::string text = reply["choices"][0]["text"].get<std::string>();
    auto g = grammar::parse_gbnf(gbnf);
    grammar::Matcher m(g.value());
    EXPECT_TRUE(m.accept_bytes(text) && m.can_end()) << text;
    EXPECT_EQ(reply["choices"][0]["finish_reason"], "stop");
  }
}

TEST_F(GrammarHttpTest, BadGrammarSchemaOrFormatIsA400NamingTheField) {
  auto expect_400 = [&](const char* extra, const std::string& param,
                        const std::string& in_message) {
    json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 4}};
    const json fields = json::parse(extra);
    for (const auto& [k, v] : fields.items()) body[k] = v;
    auto [status, reply] = post("/v1/chat/completions", body);
    EXPECT_EQ(status, 400) << body.dump();
    ASSERT_TRUE(reply.is_object() && reply.contains("error")) << reply.dump();
    EXPECT_EQ(reply["error"]["type"], "invalid_request_error") << reply.dump();
    EXPECT_EQ(reply["error"]["param"], param) << reply.dump();
    EXPECT_NE(reply["error"]["message"].dump().find(in_message), std::string::npos) << reply.dump();
  };
  expect_400(R"({"grammar": "root ::= [a-"})", "grammar", "line 1, column");
  expect_400(R"({"grammar": 7})", "grammar", "string");
  expect_400(R"({"response_format": "garbage"})", "response_format", "type");
  expect_400(R"({"response_format": {"type": "xml"}})", "response_format.type", "xml");
  expect_400(R"({"response_format": {"type": "json_schema"}})", "response_format.json_schema",
             "schema");
  expect_400(R"({"response_format": {"type": "json_schema", "json_schema": {"schema":
                {"type": "array", "uniqueItems": true}}}})",
             "response_format.json_schema.schema", "uniqueItems");
  expect_400(
      R"({"response_format": {"type": "json_schema", "json_schema": {"schema": {}, "x": 1}}})",
      "response_format.json_schema.x", "json_schema");
  expect_400(R"({"grammar": "root ::= \"a\"", "response_format": {"type": "json_object"}})",
             "grammar", "only one");
  // text is no constraint, and combines with a grammar.
  auto [status, reply] = post("/v1/completions", {{"prompt", "Hi"},
                                                  {"max_tokens", 3},
                                                  {"grammar", "root ::= \"ok\""},
                                                  {"response_format", {{"type", "text"}}}});
  EXPECT_EQ(status, 200) << reply.dump();
  EXPECT_EQ(reply["choices"][0]["text"], "ok");
}

}  // namespace
}  // namespace hearth::server
