// logprobs, n > 1, seed, logit_bias, echo and the request-field table, through the real
// server and runtime on the deterministic stub backend (tokens are bytes + 3, no BOS,
// the model never emits EOS): every check reads the HTTP reply a client would get.
#include <httplib.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "server/http_server.h"
#include "server/model_settings.h"
#include "server/runtime_service.h"
#include "stub_server.h"

namespace hearth::server {
namespace {

using nlohmann::json;

class LogprobsApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::ModelConfig m = default_model_config();
    m.id = "tiny";
    m.model_path = "tiny.gguf";
    m.n_ctx = 1024;
    m.n_seq_max = 4;
    m.policy.min_tokens = 8;
    m.policy.cold_min_tokens = 8;
    m.policy.boundary_trim_tokens = 0;
    m.policy.boundary_align_tokens = 8;
    ServerConfig config;
    config.models.push_back(m);
    Status s = server_.start(config);
    ASSERT_TRUE(s.ok()) << s.to_string();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_.port());
    client_->set_read_timeout(10, 0);
  }
  void TearDown() override { server_.stop(); }

  json post(const std::string& path, const json& body, int expect_status = 200) {
    auto r = client_->Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(r) << path;
    if (!r) return json();
    EXPECT_EQ(r->status, expect_status) << r->body;
    return json::parse(r->body, nullptr, false);
  }
  // The data events of a streamed reply, [DONE] excluded.
  std::vector<json> stream(const std::string& path, json body) {
    body["stream"] = true;
    auto r = client_->Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200);
    std::vector<json> events;
    if (!r) return events;
    std::istringstream in(r->body);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("data: ", 0) != 0 || line == "data: [DONE]") continue;
      events.push_back(json::parse(line.substr(6)));
    }
    return events;
  }
  // A 400 naming `param`.
  void expect_rejected(const std::string& path, const json& body, const std::string& param) {
    json e = post(path, body, 400);
    ASSERT_TRUE(e.contains("error")) << e.dump();
    const std::string message = e["error"]["message"];
    EXPECT_NE(message.find("'" + param + "'"), std::string::npos) << message;
    if (e.value("type", "") != "error") {  // Anthropic's error shape has no param
      EXPECT_EQ(e["error"]["param"], param) << e.dump();
    }
  }
  static json chat(const std::string& content, int max_tokens) {
    return {{"model", "tiny"},
            {"max_tokens", max_tokens},
            {"messages", json::array({{{"role", "user"}, {"content", content}}})}};
  }
  static json completion(const std::string& prompt, int max_tokens) {
    return {{"model", "tiny"}, {"max_tokens", max_tokens}, {"prompt", prompt}};
  }
  static std::string bytes_text(const json& bytes) {
    std::string s;
    for (const auto& b : bytes) s += static_cast<char>(b.get<int>());
    return s;
  }

  testing::StubServer server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(LogprobsApiTest, ChatLogprobsDescribeEveryTokenAndGreedyPicksTopOne) {
  json body = chat("Tell me about foxes", 8);
  body["temperature"] = 0;
  body["logprobs"] = true;
  body["top_logprobs"] = 3;
  json r = post("/v1/chat/completions", body);
  const json& choice = r["choices"][0];
  const json& content = choice["logprobs"]["content"];
  ASSERT_EQ(content.size(), r["usage"]["completion_tokens"].get<size_t>());
  std::string joined;
  for (const json& e : content) {
    joined += bytes_text(e["bytes"]);
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
    const json& top = e["top_logprobs"];
    ASSERT_EQ(top.size(), 3u);
    for (size_t i = 1; i < top.size(); ++i)
      EXPECT_GE(top[i - 1]["logprob"].get<double>(), top[i]["logprob"].get<double>());
    EXPECT_EQ(top[0]["token"], e["token"]);  // greedy: the chosen token is the top one
    EXPECT_EQ(top[0]["logprob"], e["logprob"]);
    double mass = 0;
    for (const json& t : top) mass += std::exp(t["logprob"].get<double>());
    EXPECT_LE(mass, 1.0 + 1e-6);
  }
  EXPECT_EQ(joined, choice["message"]["content"].get<std::string>());

  // Without logprobs the field stays null; top_logprobs alone is refused.
  json plain = post("/v1/chat/completions", chat("Tell me about foxes", 2));
  EXPECT_TRUE(plain["choices"][0]["logprobs"].is_null());
  json alone = chat("x", 2);
  alone["top_logprobs"] = 2;
  expect_rejected("/v1/chat/completions", alone, "top_logprobs");
  json many = chat("x", 2);
  many["logprobs"] = true;
  many["top_logprobs"] = 21;
  expect_rejected("/v1/chat/completions", many, "top_logprobs");
}

TEST_F(LogprobsApiTest, CompletionLogprobsAndStreamingCarryTheSameValues) {
  json body = completion("Once upon a time", 6);
  body["temperature"] = 0;
  body["logprobs"] = 2;
  json r = post("/v1/completions", body);
  const json& lp = r["choices"][0]["logprobs"];
  const std::string text = r["choices"][0]["text"];
  ASSERT_EQ(lp["tokens"].size(), 6u);
  std::string joined;
  for (size_t i = 0; i < lp["tokens"].size(); ++i) {
    EXPECT_EQ(lp["text_offset"][i].get<size_t>(), joined.size());
    joined += lp["tokens"][i].get<std::string>();
    const json& top = lp["top_logprobs"][i];
    EXPECT_EQ(top.size(), 2u);
    EXPECT_EQ(top[lp["tokens"][i].get<std::string>()], lp["token_logprobs"][i]);
  }
  EXPECT_EQ(joined, text);

  // Streamed: each chunk's logprobs are those of its own tokens, the same values.
  json streamed_logprobs = json::array();
  std::string streamed_text;
  for (const json& ev : stream("/v1/completions", body)) {
    const json& c = ev["choices"][0];
    streamed_text += c["text"].get<std::string>();
    if (!c["logprobs"].is_null())
      for (const json& v : c["logprobs"]["token_logprobs"]) streamed_logprobs.push_back(v);
  }
  EXPECT_EQ(streamed_text, text);
  EXPECT_EQ(streamed_logprobs, lp["token_logprobs"]);

  json chat_body = chat("Once upon a time", 5);
  chat_body["temperature"] = 0;
  chat_body["logprobs"] = true;
  json whole = post("/v1/chat/completions", chat_body);
  json parts = json::array();
  for (const json& ev : stream("/v1/chat/completions", chat_body)) {
    const json& c = ev["choices"][0];
    if (!c["logprobs"].is_null())
      for (const json& e : c["logprobs"]["content"]) parts.push_back(e);
  }
  EXPECT_EQ(parts, whole["choices"][0]["logprobs"]["content"]);
}

TEST_F(LogprobsApiTest, NChoicesShareOnePrefillAndFollowTheirSeeds) {
  json body = chat("A prompt the choices share, long enough to count", 5);
  body["temperature"] = 0;
  json one = post("/v1/chat/completions", body);
  const int64_t prompt_tokens = one["usage"]["prompt_tokens"];
  const int64_t before = server_.control().tokens_forwarded.load();
  body["messages"][0]["content"] = "Another prompt the choices share, not cached before";
  body["n"] = 3;
  json three = post("/v1/chat/completions", body);
  const int64_t forwarded = server_.control().tokens_forwarded.load() - before;
  ASSERT_EQ(three["choices"].size(), 3u);
  std::set<std::string> greedy_texts;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(three["choices"][i]["index"], i);
    greedy_texts.insert(three["choices"][i]["message"]["content"].get<std::string>());
  }
  EXPECT_EQ(greedy_texts.size(), 1u);  // greedy: all the same
  const int64_t n_prompt = three["usage"]["prompt_tokens"];
  const int64_t cached = three["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GT(n_prompt, prompt_tokens);
  EXPECT_EQ(three["usage"]["completion_tokens"], 15);
  // The uncached part of the prompt once, then each choice feeds back its own tokens
  // (not its last one).
  EXPECT_EQ(forwarded, (n_prompt - cached) + 3 * (5 - 1));

  json seeded = chat("Pick some words", 12);
  seeded["temperature"] = 1.5;
  seeded["seed"] = 77;
  seeded["n"] = 4;
  json a = post("/v1/chat/completions", seeded);
  json b = post("/v1/chat/completions", seeded);
  std::set<std::string> distinct;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(a["choices"][i]["message"], b["choices"][i]["message"]) << "choice " << i;
    distinct.insert(a["choices"][i]["message"]["content"].get<std::string>());
  }
  EXPECT_GE(distinct.size(), 3u);

  // Streamed: chunks carry their choice's index, and each choice's text is the same.
  std::vector<std::string> texts(4);
  for (const json& ev : stream("/v1/chat/completions", seeded)) {
    if (ev["choices"].empty()) continue;
    const json& c = ev["choices"][0];
    const size_t i = c["index"];
    ASSERT_LT(i, 4u);
    if (c["delta"].contains("content")) texts[i] += c["delta"]["content"].get<std::string>();
  }
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(texts[i], a["choices"][i]["message"]["content"]);

  json too_many = chat("x", 2);
  too_many["n"] = 5;  // n_seq_max is 4
  expect_rejected("/v1/chat/completions", too_many, "n");
  json completions_n = completion("x", 2);
  completions_n["n"] = 2;
  EXPECT_EQ(post("/v1/completions", completions_n)["choices"].size(), 2u);
}

TEST_F(LogprobsApiTest, SeedGivesTheSameOutputColdAndWarm) {
  json body = completion("The cache must not change what a seed draws from here", 16);
  body["temperature"] = 0.9;
  body["seed"] = 4242;
  json cold = post("/v1/completions", body);
  EXPECT_EQ(cold["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  json again = post("/v1/completions", body);
  json warm = post("/v1/completions", body);
  EXPECT_GT(warm["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 0);
  EXPECT_EQ(cold["choices"][0]["text"], again["choices"][0]["text"]);
  EXPECT_EQ(cold["choices"][0]["text"], warm["choices"][0]["text"]);
  body["seed"] = 4243;
  json other = post("/v1/completions", body);
  EXPECT_NE(other["choices"][0]["text"], cold["choices"][0]["text"]);
}

TEST_F(LogprobsApiTest, LogitBiasBansAndForcesAndNamesBadIds) {
  json body = completion("Bias me", 6);
  body["temperature"] = 0;
  const std::string plain = post("/v1/completions", body)["choices"][0]["text"];
  ASSERT_FALSE(plain.empty());
  const int banned = static_cast<unsigned char>(plain[0]) + 3;  // the stub's token id
  body["logit_bias"] = {{std::to_string(banned), -100}};
  const std::string without = post("/v1/completions", body)["choices"][0]["text"];
  EXPECT_EQ(without.find(plain[0]), std::string::npos) << without;

  json forced = chat("Bias me", 5);
  forced["temperature"] = 1.0;
  forced["logit_bias"] = {{std::to_string('Z' + 3), 100}};
  EXPECT_EQ(post("/v1/chat/completions", forced)["choices"][0]["message"]["content"], "ZZZZZ");

  // A token that is one byte of a UTF-8 character: `bytes` are the raw byte, `token` the
  // lossy text.
  json split = chat("Bias me", 2);
  split["logprobs"] = true;
  split["logit_bias"] = {{std::to_string(0xE2 + 3), 100}};
  const json content = post("/v1/chat/completions", split)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[0]["bytes"], json::array({0xE2}));
  EXPECT_EQ(content[0]["token"], "\xEF\xBF\xBD");

  json bad = completion("x", 2);
  bad["logit_bias"] = {{"99999", 5}};
  json e = post("/v1/completions", bad, 400);
  EXPECT_EQ(e["error"]["param"], "logit_bias");
  EXPECT_NE(e["error"]["message"].get<std::string>().find("99999"), std::string::npos);
  bad["logit_bias"] = {{"abc", 5}};
  expect_rejected("/v1/completions", bad, "logit_bias");
  json out_of_range = chat("x", 2);
  out_of_range["logit_bias"] = {{"5", 101}};
  expect_rejected("/v1/chat/completions", out_of_range, "logit_bias");
}

TEST_F(LogprobsApiTest, EchoPrependsThePrompt) {
  json body = completion("Echo this prompt", 4);
  body["temperature"] = 0;
  const std::string plain = post("/v1/completions", body)["choices"][0]["text"];
  body["echo"] = true;
  EXPECT_EQ(post("/v1/completions", body)["choices"][0]["text"], "Echo this prompt" + plain);
  std::string streamed;
  for (const json& ev : stream("/v1/completions", body))
    if (!ev["choices"].empty()) streamed += ev["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(streamed, "Echo this prompt" + plain);
  body["logprobs"] = 1;
  expect_rejected("/v1/completions", body, "echo");
}

TEST_F(LogprobsApiTest, EveryFieldIsHonouredOrRefusedByName) {
  // No-ops that cannot change the output are accepted.
  json ok = chat("hi", 2);
  ok["user"] = "u-1";
  ok["metadata"] = {{"k", "v"}};
  ok["store"] = false;
  post("/v1/chat/completions", ok);
  // Refused, each naming its field.
  json garbage = chat("hi", 2);
  garbage["response_format"] = "garbage";
  expect_rejected("/v1/chat/completions", garbage, "response_format");
  json schema = chat("hi", 2);
  schema["response_format"] = {{"type", "xml"}};
  expect_rejected("/v1/chat/completions", schema, "response_format.type");
  json text_format = chat("hi", 2);
  text_format["response_format"] = {{"type", "text"}};
  post("/v1/chat/completions", text_format);
  json unknown = chat("hi", 2);
  unknown["frobnicate"] = 1;
  expect_rejected("/v1/chat/completions", unknown, "frobnicate");
  json suffix = completion("hi", 2);
  suffix["suffix"] = "end";
  expect_rejected("/v1/completions", suffix, "suffix");
  json best_of = completion("hi", 2);
  best_of["best_of"] = 3;
  expect_rejected("/v1/completions", best_of, "best_of");

  json thinking = {{"model", "tiny"},
                   {"max_tokens", 2},
                   {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                   {"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}}};
  expect_rejected("/v1/messages", thinking, "thinking.budget_tokens");  // >= max_tokens
  thinking["thinking"] = {{"type", "disabled"}};
  post("/v1/messages", thinking);
  thinking["logprobs"] = true;  // an OpenAI field is unknown to Anthropic's API
  expect_rejected("/v1/messages", thinking, "logprobs");

  json emb = {{"model", "tiny"}, {"input", "hello"}};
  const size_t width = post("/v1/embeddings", emb)["data"][0]["embedding"].size();
  emb["dimensions"] = width;
  EXPECT_EQ(post("/v1/embeddings", emb)["data"][0]["embedding"].size(), width);
  emb["dimensions"] = width / 2;  // shortened (then renormalised)
  EXPECT_EQ(post("/v1/embeddings", emb)["data"][0]["embedding"].size(), width / 2);
  emb["dimensions"] = width + 1;
  expect_rejected("/v1/embeddings", emb, "dimensions");
}

// The same through the engine on a real model (stories260K): logits that matter, SPM
// tokens with a leading-space marker, and three choices forked from one prefill.
TEST(EngineLogprobs, RealModelLogprobsAndForkedChoicesAgree) {
  const std::string path = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " is absent";
  ServerConfig config;
  config.port = 0;
  runtime::ModelConfig m;
  m.id = "stories";
  m.model_path = path;
  m.n_ctx = 256;
  m.n_seq_max = 3;
  config.models.push_back(m);
  auto service = make_runtime_service(config);
  ASSERT_TRUE(service.ok()) << service.status().to_string();
  HttpServer server(**service, config);
  ASSERT_TRUE(server.bind().ok());
  std::thread thread([&] { server.run(); });
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(30, 0);
  json body = {{"model", "stories"}, {"prompt", "Once upon a time"},
               {"max_tokens", 12},   {"temperature", 0},
               {"logprobs", 5},      {"n", 3}};
  auto r = client.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
  const json reply = json::parse(r->body);
  ASSERT_EQ(reply["choices"].size(), 3u);
  const json& first = reply["choices"][0];
  for (const json& c : reply["choices"]) {
    EXPECT_EQ(c["text"], first["text"]);
    EXPECT_EQ(c["logprobs"], first["logprobs"]);
  }
  const json& lp = first["logprobs"];
  std::string joined;
  for (size_t i = 0; i < lp["tokens"].size(); ++i) {
    const std::string token = lp["tokens"][i];
    joined += token;
    const json& top = lp["top_logprobs"][i];
    double best = -1e30, mass = 0;
    for (const auto& [text, value] : top.items()) {
      best = std::max(best, value.get<double>());
      mass += std::exp(value.get<double>());
    }
    EXPECT_EQ(lp["token_logprobs"][i].get<double>(), best);  // greedy: the top one
    EXPECT_EQ(top[token], lp["token_logprobs"][i]);
    EXPECT_LT(mass, 1.0 + 1e-6);
    EXPECT_LT(best, 0.0);  // a random-ish tiny model is never certain
  }
  EXPECT_EQ(joined, first["text"].get<std::string>());
  server.stop();
  thread.join();
  (*service)->shutdown();
}

}  // namespace
}  // namespace hearth::server
