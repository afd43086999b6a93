#include "server/request_parse.h"

#include <gtest/gtest.h>

namespace hearth::server {
namespace {

using nlohmann::json;

TEST(RequestParse, ChatAcceptsSamplingParameters) {
  TextRequest r;
  auto e =
      parse_chat_request(json::parse(R"({"model":"m","messages":[{"role":"developer","content":"s"},
      {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
      "temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.05,"seed":7,"max_completion_tokens":12,
      "stop":["x","y"],"repetition_penalty":1.1,"frequency_penalty":0.5,"presence_penalty":-0.5,
      "stream":true,"stream_options":{"include_usage":true}})"),
                         r);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.05f);
  EXPECT_FLOAT_EQ(r.sampling.repetition_penalty, 1.1f);
  EXPECT_FLOAT_EQ(r.sampling.frequency_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.presence_penalty, -0.5f);
  EXPECT_EQ(r.sampling.seed, std::optional<uint64_t>(7u));
  EXPECT_EQ(r.max_tokens, 12);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
}

struct BadCase {
  const char* body;
  const char* field;
};

TEST(RequestParse, ChatRejectionsNameTheField) {
  const BadCase cases[] = {
      {R"({"messages":"hi"})", "messages"},
      {R"({"messages":[]})", "messages"},
      {R"({})", "messages"},
      {R"({"messages":[{"role":"robot","content":"x"}]})", "messages[0].role"},
      {R"({"messages":[{"role":"user"}]})", "messages[0].content"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})",
       "messages[0].content[0].type"},
      {R"({"model":5,"messages":[{"role":"user","content":"x"}]})", "model"},
      {R"({"temperature":"hot","messages":[{"role":"user","content":"x"}]})", "temperature"},
      {R"({"temperature":3,"messages":[{"role":"user","content":"x"}]})", "temperature"},
      {R"({"max_tokens":0,"messages":[{"role":"user","content":"x"}]})", "max_tokens"},
      {R"({"max_tokens":1.5,"messages":[{"role":"user","content":"x"}]})", "max_tokens"},
      {R"({"stop":[1],"messages":[{"role":"user","content":"x"}]})", "stop"},
      {R"({"n":0,"messages":[{"role":"user","content":"x"}]})", "n"},
      {R"({"n":129,"messages":[{"role":"user","content":"x"}]})", "n"},
      {R"({"logprobs":3,"messages":[{"role":"user","content":"x"}]})", "logprobs"},
      {R"({"top_logprobs":3,"messages":[{"role":"user","content":"x"}]})", "top_logprobs"},
      {R"({"logit_bias":{"x":1},"messages":[{"role":"user","content":"x"}]})", "logit_bias"},
      {R"({"logit_bias":{"-1":1},"messages":[{"role":"user","content":"x"}]})", "logit_bias"},
      {R"({"logit_bias":[1],"messages":[{"role":"user","content":"x"}]})", "logit_bias"},
      {R"({"response_format":"garbage","messages":[{"role":"user","content":"x"}]})",
       "response_format"},
      {R"({"tools":"x","messages":[{"role":"user","content":"x"}]})", "tools"},
      {R"({"max_token":5,"messages":[{"role":"user","content":"x"}]})", "max_token"},
      {R"({"seed":"x","messages":[{"role":"user","content":"x"}]})", "seed"},
      {R"({"stream":"yes","messages":[{"role":"user","content":"x"}]})", "stream"},
  };
  for (const auto& c : cases) {
    TextRequest r;
    auto e = parse_chat_request(json::parse(c.body), r);
    ASSERT_TRUE(e) << c.body;
    EXPECT_EQ(e->http_status, 400) << c.body;
    EXPECT_EQ(e->param, c.field) << c.body;
    EXPECT_NE(e->message.find(c.field), std::string::npos) << e->message;
  }
}

TEST(RequestParse, CompletionPromptForms) {
  TextRequest r;
  EXPECT_FALSE(parse_completion_request(json::parse(R"({"prompt":"hi"})"), r));
  EXPECT_EQ(r.prompt, "hi");
  TextRequest t;
  EXPECT_FALSE(parse_completion_request(json::parse(R"({"prompt":[5,6,7]})"), t));
  ASSERT_TRUE(t.prompt_tokens);
  EXPECT_EQ(t.prompt_tokens->size(), 3u);
  TextRequest b;
  auto e = parse_completion_request(json::parse(R"({"prompt":["a","b"]})"), b);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "prompt");
  TextRequest m;
  e = parse_completion_request(json::parse(R"({"model":"x"})"), m);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "prompt");
}

TEST(RequestParse, AnthropicMessages) {
  TextRequest r;
  auto e = parse_messages_request(json::parse(R"({"model":"m","max_tokens":5,
      "system":[{"type":"text","text":"be nice"}],"stop_sequences":["Z"],
      "messages":[{"role":"user","content":"hi"}]})"),
                                  r);
  ASSERT_FALSE(e) << e->message;
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "be nice");
  EXPECT_EQ(r.stop, std::vector<std::string>{"Z"});
  TextRequest missing;
  e = parse_messages_request(json::parse(R"({"messages":[{"role":"user","content":"hi"}]})"),
                             missing);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "max_tokens");
  TextRequest sys_role;
  e = parse_messages_request(
      json::parse(R"({"max_tokens":3,"messages":[{"role":"system","content":"hi"}]})"), sys_role);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "messages[0].role");
}

TEST(RequestParse, LogprobsNAndBias) {
  TextRequest chat;
  ASSERT_FALSE(parse_chat_request(
      json::parse(R"({"logprobs":true,"top_logprobs":4,"n":3,"logit_bias":{"7":-100,"9":2.5},
                     "user":"u","messages":[{"role":"user","content":"x"}]})"),
      chat));
  EXPECT_EQ(chat.logprobs, 4);
  EXPECT_EQ(chat.n, 3);
  ASSERT_EQ(chat.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(chat.sampling.logit_bias[0], (std::pair<TokenId, float>{7, -100.0f}));
  EXPECT_EQ(chat.sampling.logit_bias[1], (std::pair<TokenId, float>{9, 2.5f}));
  TextRequest none;
  ASSERT_FALSE(parse_chat_request(
      json::parse(R"({"logprobs":false,"messages":[{"role":"user","content":"x"}]})"), none));
  EXPECT_EQ(none.logprobs, -1);
  TextRequest completion;
  ASSERT_FALSE(parse_completion_request(
      json::parse(R"({"prompt":"p","logprobs":0,"n":2,"best_of":2})"), completion));
  EXPECT_EQ(completion.logprobs, 0);
  TextRequest echo;
  auto e =
      parse_completion_request(json::parse(R"({"prompt":"p","logprobs":1,"echo":true})"), echo);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "echo");
}

TEST(RequestParse, BodyMustBeAJsonObject) {
  json j;
  EXPECT_TRUE(parse_json_object("{", j));
  EXPECT_TRUE(parse_json_object("[1]", j));
  EXPECT_FALSE(parse_json_object("{}", j));
}

}  // namespace
}  // namespace hearth::server
