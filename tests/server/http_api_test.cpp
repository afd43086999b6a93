// The HTTP layer driven in-process over the real runtime (RuntimeService over
// hearth::runtime::Runtime) with the deterministic stub backend: tokens are bytes + 3
// with no BOS, the model never emits EOS, and StubControl slows its steps when a test
// needs a generation to still be running.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "protected_routes.h"
#include "server/model_settings.h"
#include "stub_server.h"

namespace hearth::server {
namespace {

using nlohmann::json;

class HttpApiTest : public ::testing::Test {
 protected:
  // One stub model, "tiny", whose save policy lets short test prompts be cached.
  void start(ServerConfig config = {}, int64_t context = 1024, int32_t n_seq_max = 4) {
    runtime::ModelConfig m = default_model_config();
    m.n_seq_max = n_seq_max;
    m.id = "tiny";
    m.model_path = "tiny.gguf";
    m.n_ctx = static_cast<int32_t>(context);
    m.policy.min_tokens = 8;
    m.policy.cold_min_tokens = 8;
    m.policy.boundary_trim_tokens = 0;
    m.policy.boundary_align_tokens = 8;
    config.models.push_back(m);
    Status s = server_.start(config);
    ASSERT_TRUE(s.ok()) << s.to_string();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_.port());
    client_->set_read_timeout(10, 0);
  }
  void TearDown() override { server_.stop(); }

  // Polls the runtime until `model`'s sequences in use reach `n` (bounded).
  bool wait_active(int64_t n, int timeout_ms = 2000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (server_.active("tiny") != n) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }

  std::string metrics() {
    auto r = client_->Get("/metrics");
    return r ? r->body : std::string();
  }

  // Whether /metrics shows `line` within timeout_ms: the HTTP thread records a request's
  // outcome after the runtime has freed its slot, so a check right after wait_active
  // can come too early.
  bool wait_metric(const std::string& line, int timeout_ms = 2000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (metrics().find(line) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

  httplib::Result post(const std::string& path, const json& body, httplib::Headers headers = {}) {
    return client_->Post(path.c_str(), headers, body.dump(), "application/json");
  }

  static json chat_body(const std::string& content, int max_tokens = 4) {
    return {{"model", "tiny"},
            {"messages", json::array({{{"role", "user"}, {"content", content}}})},
            {"max_tokens", max_tokens},
            {"temperature", 0}};
  }

  // Expects an OpenAI error with this status whose message and param name `field`.
  static void expect_error(const httplib::Result& r, int status, const std::string& field) {
    ASSERT_TRUE(r) << "no response";
    EXPECT_EQ(r->status, status) << r->body;
    json j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.contains("error")) << r->body;
    for (const char* k : {"message", "type", "param", "code"})
      EXPECT_TRUE(j["error"].contains(k)) << k;
    if (!field.empty()) {
      EXPECT_EQ(j["error"]["param"], field) << r->body;
      EXPECT_NE(j["error"]["message"].get<std::string>().find(field), std::string::npos) << r->body;
    }
  }

  testing::StubServer server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(HttpApiTest, ChatCompletionShapeAndCachedTokensOnSecondTurn) {
  start();
  auto r1 = post("/v1/chat/completions", chat_body("hello there"));
  ASSERT_TRUE(r1);
  ASSERT_EQ(r1->status, 200) << r1->body;
  json j1 = json::parse(r1->body);
  EXPECT_EQ(j1["object"], "chat.completion");
  EXPECT_EQ(j1["choices"][0]["message"]["role"], "assistant");
  const std::string reply = j1["choices"][0]["message"]["content"];
  EXPECT_FALSE(reply.empty());
  EXPECT_EQ(j1["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j1["usage"]["completion_tokens"], 4);
  EXPECT_EQ(j1["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(j1["usage"]["hearth"]["cache_hit"], "cold") << r1->body;

  json turn2 = chat_body("hello there");
  turn2["messages"].push_back({{"role", "assistant"}, {"content", reply}});
  turn2["messages"].push_back({{"role", "user"}, {"content", "and then?"}});
  auto r2 = post("/v1/chat/completions", turn2);
  ASSERT_TRUE(r2);
  json j2 = json::parse(r2->body);
  EXPECT_GT(j2["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0) << r2->body;
  EXPECT_LT(j2["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(),
            j2["usage"]["prompt_tokens"].get<int>());
  // A second turn extends the first's cached state: a warm hit, never "cold".
  const std::string kind = j2["usage"]["hearth"]["cache_hit"];
  EXPECT_TRUE(kind == "sticky" || kind == "resume" || kind == "partial" || kind == "exact")
      << r2->body;
}

TEST_F(HttpApiTest, GreedyIsDeterministic) {
  start();
  auto a = post("/v1/completions", {{"prompt", "abc"}, {"max_tokens", 6}, {"temperature", 0}});
  auto b = post("/v1/completions", {{"prompt", "abc"}, {"max_tokens", 6}, {"temperature", 0}});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(json::parse(a->body)["choices"][0]["text"], json::parse(b->body)["choices"][0]["text"]);
  EXPECT_EQ(json::parse(a->body)["object"], "text_completion");
}

TEST_F(HttpApiTest, StreamingChatChunksEndWithDone) {
  start();
  json body = chat_body("stream me", 5);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  auto r = post("/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  std::vector<json> chunks;
  size_t pos = 0;
  bool done = false;
  while ((pos = r->body.find("data: ", pos)) != std::string::npos) {
    const size_t end = r->body.find("\n\n", pos);
    const std::string data = r->body.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    chunks.push_back(json::parse(data));
  }
  EXPECT_TRUE(done);
  ASSERT_GE(chunks.size(), 3u);
  EXPECT_EQ(chunks.front()["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (auto& c : chunks) {
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    if (!c["choices"].empty() && c["choices"][0]["delta"].contains("content")) {
      text += c["choices"][0]["delta"]["content"].get<std::string>();
    }
  }
  EXPECT_EQ(chunks[chunks.size() - 2]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(chunks.back()["usage"]["completion_tokens"], 5);
  // Same text as the non-streaming call for the same prompt.
  auto plain = post("/v1/chat/completions", chat_body("stream me", 5));
  EXPECT_EQ(json::parse(plain->body)["choices"][0]["message"]["content"], text);
}

TEST_F(HttpApiTest, StopStringsCutTheTextAndReportStop) {
  start();
  auto full = post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 12}, {"temperature", 0}});
  const std::string text = json::parse(full->body)["choices"][0]["text"];
  ASSERT_GT(text.size(), 6u);
  const std::string stop = text.substr(text.size() / 2, 3);
  auto cut = post("/v1/completions",
                  {{"prompt", "x"}, {"max_tokens", 12}, {"temperature", 0}, {"stop", stop}});
  json j = json::parse(cut->body);
  EXPECT_EQ(j["choices"][0]["text"], text.substr(0, text.find(stop)));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
}

TEST_F(HttpApiTest, AnthropicMessagesNonStreamingAndStreaming) {
  start();
  json body = {{"model", "tiny"},
               {"max_tokens", 3},
               {"system", "be brief"},
               {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  auto r = post("/v1/messages", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["type"], "message");
  EXPECT_EQ(j["content"][0]["type"], "text");
  EXPECT_EQ(j["stop_reason"], "max_tokens");
  EXPECT_TRUE(j["usage"].contains("cache_read_input_tokens"));
  body["stream"] = true;
  auto s = post("/v1/messages", body);
  ASSERT_TRUE(s);
  std::vector<std::string> events;
  size_t pos = 0;
  while ((pos = s->body.find("event: ", pos)) != std::string::npos) {
    const size_t end = s->body.find('\n', pos);
    events.push_back(s->body.substr(pos + 7, end - pos - 7));
    pos = end;
  }
  ASSERT_GE(events.size(), 6u);
  EXPECT_EQ(events.front(), "message_start");
  EXPECT_EQ(events[1], "content_block_start");
  EXPECT_EQ(events[2], "content_block_delta");
  EXPECT_EQ(events[events.size() - 3], "content_block_stop");
  EXPECT_EQ(events[events.size() - 2], "message_delta");
  EXPECT_EQ(events.back(), "message_stop");
  // Second identical request reads its prompt from the cache.
  EXPECT_NE(s->body.find("\"cache_read_input_tokens\":"), std::string::npos);
}

TEST_F(HttpApiTest, AnthropicErrorShape) {
  start();
  auto r = post("/v1/messages", {{"model", "tiny"}, {"messages", json::array()}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  json j = json::parse(r->body);
  EXPECT_EQ(j["type"], "error");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("max_tokens"), std::string::npos);
}

TEST_F(HttpApiTest, ValidationErrorsAndServerKeepsServing) {
  ServerConfig config;
  config.limits.max_tokens = 200;
  start(config, /*context=*/128);
  auto bad_json = client_->Post("/v1/chat/completions", "{not json", "application/json");
  expect_error(bad_json, 400, "");
  expect_error(post("/v1/chat/completions", {{"messages", 5}}), 400, "messages");
  json wrong_type = chat_body("x");
  wrong_type["top_p"] = "high";
  expect_error(post("/v1/chat/completions", wrong_type), 400, "top_p");
  json unknown_model = chat_body("x");
  unknown_model["model"] = "nope";
  expect_error(post("/v1/chat/completions", unknown_model), 404, "model");
  expect_error(post("/v1/chat/completions", chat_body(std::string(200, 'a'))), 400, "messages");
  expect_error(post("/v1/completions", {{"prompt", "hi"}, {"max_tokens", 500}}), 400, "max_tokens");
  // "hi" is 2 tokens: 126 more fill the context exactly, 127 do not fit.
  expect_error(post("/v1/completions", {{"prompt", "hi"}, {"max_tokens", 127}}), 400, "max_tokens");
  expect_error(post("/v1/embeddings", {{"model", "tiny"}}), 400, "input");
  auto not_found = client_->Get("/v1/nothing");
  ASSERT_TRUE(not_found);
  EXPECT_EQ(not_found->status, 404);
  auto ok = post("/v1/chat/completions", chat_body("still here"));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST_F(HttpApiTest, BodyLimitGives413) {
  ServerConfig config;
  config.limits.max_body_bytes = 2048;
  start(config);
  auto r = post("/v1/completions", {{"prompt", std::string(5000, 'a')}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(r->body.find("max_body_bytes"), std::string::npos);
}

TEST_F(HttpApiTest, EmbeddingsFloatAndBase64) {
  start();
  auto r = post("/v1/embeddings", {{"model", "tiny"}, {"input", json::array({"a", "bb"})}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_EQ(j["data"][0]["embedding"].size(), 16u);
  EXPECT_NE(j["data"][0]["embedding"], j["data"][1]["embedding"]);
  auto b = post("/v1/embeddings", {{"input", "a"}, {"encoding_format", "base64"}});
  json jb = json::parse(b->body);
  EXPECT_EQ(jb["data"][0]["embedding"].get<std::string>().size(), 88u);  // 64 bytes -> 88 chars
}

TEST_F(HttpApiTest, ModelsTokenizeAndCacheAdmin) {
  start();
  auto models = client_->Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "tiny");
  // Where the model's layers run (BackendInfo::device): the stub is a CPU backend.
  EXPECT_EQ(json::parse(models->body)["data"][0]["device"], "cpu") << models->body;
  EXPECT_EQ(json::parse(models->body)["data"][0]["n_gpu_layers"], 0) << models->body;
  auto tok = post("/hearth/tokenize", {{"text", "ab"}});
  json tj = json::parse(tok->body);
  EXPECT_EQ(tj["tokens"], json::array({'a' + 3, 'b' + 3})) << tok->body;  // the stub's bytes + 3
  auto detok = post("/hearth/detokenize", {{"tokens", tj["tokens"]}});
  EXPECT_EQ(json::parse(detok->body)["text"], "ab");
  auto done = post("/v1/completions", {{"prompt", "a prompt the policy saves"}, {"max_tokens", 2}});
  ASSERT_EQ(done->status, 200) << done->body;
  // The response is sent once its saves (a cold save of the aligned prompt, the finish
  // save) are queued; the rows publish soon after.
  json counters, rows;
  auto all_available = [&] {
    for (const auto& row : rows)
      if (row["status"] != "available") return false;
    return !rows.empty();
  };
  for (int i = 0; i < 500; ++i) {
    counters = json::parse(client_->Get("/hearth/cache/counters")->body)["counters"];
    rows = json::parse(client_->Get("/hearth/cache/rows")->body)["rows"];
    // The two reads are not one snapshot: a save may publish between them, so wait
    // until they agree as well.
    const size_t saves =
        static_cast<size_t>(counters.value("saves_cold", 0) + counters.value("saves_finish", 0));
    if (counters.value("saves_finish", 0) == 1 && all_available() && rows.size() == saves) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
  }
  EXPECT_EQ(counters.value("saves_finish", 0), 1) << counters.dump();
  EXPECT_TRUE(all_available()) << rows.dump();
  EXPECT_EQ(rows.size(), static_cast<size_t>(counters.value("saves_cold", 0) +
                                             counters.value("saves_finish", 0)))
      << counters.dump() << rows.dump();
  auto evict = post("/hearth/cache/evict", {{"bytes", 1}});
  EXPECT_GT(json::parse(evict->body)["freed_bytes"].get<int>(), 0);
  expect_error(post("/hearth/cache/evict", {{"bytes", "x"}}), 400, "bytes");
  auto gc = post("/hearth/cache/gc", json::object());
  EXPECT_EQ(gc->status, 200);
  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  for (const char* m : {"hearth_http_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 1",
                        "hearth_time_to_first_token_seconds_count{model=\"tiny\"} 1",
                        "hearth_cache_saves_total{reason=\"finish\"} 1",
                        "hearth_cache_tier_bytes{tier=\"ram\"}", "hearth_queue_depth 0"}) {
    EXPECT_NE(metrics->body.find(m), std::string::npos) << m;
  }
}

TEST_F(HttpApiTest, ModelLoadingOnlyFromModelsDir) {
  const auto base =
      std::filesystem::temp_directory_path() / ("hearth-models-" + std::to_string(::getpid()));
  const auto dir = base / "models";
  std::filesystem::create_directories(dir / "sub");
  std::ofstream(dir / "sub" / "m.gguf") << "x";
  std::ofstream(base / "outside.gguf") << "x";
  ServerConfig config;
  config.models_dir = dir.string();
  start(config);
  auto ok = post("/hearth/models", {{"path", "sub/m.gguf"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 201) << ok->body;
  EXPECT_EQ(json::parse(ok->body)["id"], "m");
  expect_error(post("/hearth/models", {{"path", "../outside.gguf"}}), 400, "path");
  expect_error(post("/hearth/models", {{"path", (dir.parent_path() / "outside.gguf").string()}}),
               400, "path");
  expect_error(post("/hearth/models", {{"path", "sub/../../outside.gguf"}}), 400, "path");
  std::filesystem::create_symlink(base / "outside.gguf", dir / "link.gguf");  // escape via symlink
  expect_error(post("/hearth/models", {{"path", "link.gguf"}}), 400, "path");
  expect_error(post("/hearth/models", {{"path", "missing.gguf"}}), 404, "path");
  // The body's keys are the [[models]] table's, applied to the runtime's ModelConfig:
  // what /hearth/models reports is what was asked for; a bad key or value is a 400
  // naming it, never dropped or narrowed.
  auto tuned = post("/hearth/models", {{"path", "sub/m.gguf"},
                                       {"id", "m2"},
                                       {"n_seq_max", 2},
                                       {"context", 512},
                                       {"tier", "ram"},
                                       {"policy", {{"min_tokens", 16}}}});
  ASSERT_TRUE(tuned);
  ASSERT_EQ(tuned->status, 201) << tuned->body;
  json m2 = json::parse(tuned->body);
  EXPECT_EQ(m2["id"], "m2");
  EXPECT_EQ(m2["n_seq_max"], 2);
  EXPECT_EQ(m2["context_length"], 512);
  EXPECT_EQ(m2["tier"], "ram");
  EXPECT_EQ(m2["device"], "cpu");
  EXPECT_EQ(m2["n_gpu_layers"], 0);
  // The device keys: a text parse_device refuses, or a count, is a 400 naming the key.
  expect_error(post("/hearth/models", {{"path", "sub/m.gguf"}, {"id", "m3"}, {"device", "gpu"}}),
               400, "device");
  expect_error(post("/hearth/models", {{"path", "sub/m.gguf"}, {"id", "m3"}, {"n_gpu_layers", -5}}),
               400, "n_gpu_layers");
  auto counted =
      post("/hearth/models", {{"path", "sub/m.gguf"}, {"id", "m3"}, {"n_gpu_layers", 8}});
  expect_error(counted, 400, "");
  EXPECT_NE(counted->body.find("n_gpu_layers: 8 layers on a GPU"), std::string::npos)
      << counted->body;
  expect_error(post("/hearth/models", {{"path", "sub/m.gguf"}, {"id", "m3"}, {"colour", 1}}), 400,
               "colour");
  expect_error(post("/hearth/models", {{"path", "sub/m.gguf"}, {"id", "m3"}, {"tier", "bogus"}}),
               400, "tier");
  expect_error(
      post("/hearth/models", {{"path", "sub/m.gguf"}, {"id", "m3"}, {"context", 4294967304LL}}),
      400, "context");
  expect_error(post("/hearth/models", {{"path", "sub/m.gguf"}, {"id", "m3"}, {"n_seq_max", "2"}}),
               400, "n_seq_max");
  expect_error(post("/hearth/models",
                    {{"path", "sub/m.gguf"}, {"id", "m3"}, {"policy", {{"min_tokenz", 1}}}}),
               400, "policy.min_tokenz");
  expect_error(post("/hearth/models", {{"path", "sub/m.gguf"}, {"id", "../m3"}}), 400, "id");
  expect_error(
      post("/hearth/models", {{"path", "sub/m.gguf"}, {"id", "m3"}, {"kv_budget", "lots"}}), 400,
      "kv_budget");
  expect_error(post("/hearth/models", {{"path", "sub/m.gguf"}, {"id", "m3"}, {"kv_budget", -1}}),
               400, "kv_budget");
  EXPECT_EQ(client_->Delete("/hearth/models/m2")->status, 200);
  auto del = client_->Delete("/hearth/models/m");
  EXPECT_EQ(del->status, 200);
  EXPECT_EQ(client_->Delete("/hearth/models/m")->status, 404);
  std::filesystem::remove_all(base);
}

TEST_F(HttpApiTest, ModelLoadingRefusedWithoutModelsDir) {
  start();
  expect_error(post("/hearth/models", {{"path", "/etc/passwd"}}), 403, "path");
}

TEST_F(HttpApiTest, AuthProtectsEverythingButHealth) {
  ServerConfig config;
  config.api_key = "sekrit";
  start(config);
  for (const httplib::Headers& h : testing::bad_credentials("sekrit")) {
    auto health = client_->Get("/health", h);
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200) << "/health must stay open";
  }
  for (const testing::Route& route : testing::protected_routes()) {
    for (const httplib::Headers& h : testing::bad_credentials("sekrit")) {
      auto r = testing::send(*client_, route, h);
      ASSERT_TRUE(r) << route.method << " " << route.path;
      EXPECT_EQ(r->status, 401) << route.method << " " << route.path << " with "
                                << (h.empty() ? "no key"
                                              : h.begin()->first + ": " + h.begin()->second);
      EXPECT_EQ(r->get_header_value("WWW-Authenticate"), "Bearer") << route.path;
    }
    // The right key in either header form gets past auth (whatever the route answers).
    for (const httplib::Headers& h : {httplib::Headers{{"Authorization", "Bearer sekrit"}},
                                      httplib::Headers{{"x-api-key", "sekrit"}}}) {
      auto r = testing::send(*client_, route, h);
      ASSERT_TRUE(r) << route.path;
      EXPECT_NE(r->status, 401) << route.method << " " << route.path << ": " << r->body;
    }
  }
  EXPECT_EQ(client_->Get("/v1/models", {{"Authorization", "Bearer sekrit"}})->status, 200);
}

// Non-streaming replies are written only at the end, so the server watches the socket:
// a client that closes while waiting cancels the generation too.
TEST_F(HttpApiTest, ClientDisconnectCancelsNonStreamingGeneration) {
  server_.control().step_delay_us = 20000;  // 500 tokens would take 10 s
  start();
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server_.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string body = chat_body("wait for me", 500).dump();
  const std::string request =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  ASSERT_TRUE(wait_active(1));
  ::close(fd);  // the client gives up
  const auto closed = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_active(0, 1500)) << "generation still running after the client left";
  // Noticed at the next generated fragment (20 ms apart), not at the end (10 s).
  EXPECT_LT(std::chrono::steady_clock::now() - closed, std::chrono::milliseconds(1000));
  // The sequence is freed on the worker before the request's own thread records the
  // outcome (499, the disconnect): wait for the last of those, bounded.
  std::string m = metrics();
  for (int i = 0; i < 200 && m.find("status=\"499\"} 1") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    m = metrics();
  }
  EXPECT_NE(m.find("hearth_client_disconnects_total 1"), std::string::npos) << m;
  EXPECT_NE(m.find("hearth_cancelled_generations_total 1"), std::string::npos) << m;
  EXPECT_NE(
      m.find("hearth_http_requests_total{endpoint=\"/v1/chat/completions\",status=\"499\"} 1"),
      std::string::npos)
      << m.substr(0, 600);
}

TEST_F(HttpApiTest, ClientDisconnectCancelsStreamingGeneration) {
  server_.control().step_delay_us = 20000;
  start();
  // A receiver that aborts after a few chunks plays the client that goes away; the
  // client is destroyed at once, which closes its socket (Client::stop() is avoided:
  // under TSan it unlocks a mutex the uninstrumented library locked).
  json body = chat_body("long two", 500);
  body["stream"] = true;
  int chunks = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };
  auto started = std::chrono::steady_clock::now();
  {
    httplib::Client c("127.0.0.1", server_.port());
    (void)c.send(req);
  }
  // Within a few token ticks the generation must be cancelled and its slot freed.
  EXPECT_TRUE(wait_active(0));
  EXPECT_TRUE(wait_metric("hearth_cancelled_generations_total 1")) << metrics();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

// A token id the model does not have gets its own error code, naming the id.
TEST_F(HttpApiTest, OutOfVocabularyTokenIdHasItsOwnCode) {
  start();
  auto r = post("/v1/completions", {{"prompt", {70, 5000}}, {"max_tokens", 2}});
  expect_error(r, 400, "prompt");
  const json j = json::parse(r->body);
  EXPECT_EQ(j["error"]["code"], "invalid_token_id") << r->body;
  EXPECT_NE(j["error"]["message"].get<std::string>().find("5000"), std::string::npos) << r->body;
}

// One queue, the runtime's: a model running its n_seq_max requests with a full queue
// turns the next one away before any reply has started. The fixture: "tiny" runs one
// sequence, queues none, and a slow request holds that sequence until join().
class FullQueueTest : public HttpApiTest {
 protected:
  void SetUp() override {
    server_.control().step_delay_us = 50000;
    ServerConfig config;
    config.limits.max_queued_requests = 0;
    start(config, 1024, /*n_seq_max=*/1);
    busy_ = std::thread([this] {
      httplib::Client c("127.0.0.1", server_.port());
      c.set_read_timeout(20, 0);
      c.Post("/v1/completions", json{{"prompt", "a"}, {"max_tokens", 20}}.dump(),
             "application/json");
    });
    EXPECT_TRUE(wait_active(1));  // not ASSERT: `busy_` must be joined
  }
  void join() {
    if (busy_.joinable()) busy_.join();
  }
  void TearDown() override {
    join();
    HttpApiTest::TearDown();
  }
  std::thread busy_;
};

TEST_F(FullQueueTest, Answers429WithRetryAfter) {
  auto r = post("/v1/completions", {{"prompt", "b"}, {"max_tokens", 2}});
  join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429) << r->body;
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  auto after = post("/v1/completions", {{"prompt", "b"}, {"max_tokens", 2}});
  EXPECT_EQ(after->status, 200);
}

// A streaming request the model's queue cannot take is refused before the event stream
// starts: a 429 status, not a 200 with an error event.
TEST_F(FullQueueTest, Answers429BeforeAStreamStarts) {
  auto chat = post("/v1/chat/completions",
                   {{"messages", {{{"role", "user"}, {"content", "b"}}}}, {"stream", true}});
  auto messages = post("/v1/messages", {{"model", "tiny"},
                                        {"max_tokens", 2},
                                        {"stream", true},
                                        {"messages", {{{"role", "user"}, {"content", "b"}}}}});
  join();
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 429) << chat->body;
  EXPECT_EQ(chat->get_header_value("Retry-After"), "1");
  ASSERT_TRUE(messages);
  EXPECT_EQ(messages->status, 429) << messages->body;
  EXPECT_NE(messages->body.find("rate_limit_error"), std::string::npos) << messages->body;
}

}  // namespace
}  // namespace hearth::server
