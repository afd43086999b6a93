// Cache control over HTTP (issue #23 item 6) and the model knobs of POST /hearth/models
// (item 5), in-process over the real runtime with the stub backend: POST /hearth/prefill,
// parent_key / finish_key, cache_prompt: false, evict and shutdown of one model, and the
// pressure scheduler's enable / disable / check / status.
#include <httplib.h>

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "server/model_settings.h"
#include "stub_server.h"

namespace hearth::server {
namespace {

using nlohmann::json;

class CacheControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerConfig config;
    runtime::ModelConfig m = default_model_config();
    m.id = "tiny";
    m.model_path = "tiny.gguf";
    m.n_ctx = 1024;
    m.policy.min_tokens = 8;  // the static gate: every test prompt is saved
    m.policy.cold_min_tokens = 8;
    m.policy.boundary_trim_tokens = 0;
    m.policy.boundary_align_tokens = 8;
    config.models.push_back(m);
    models_dir_ = std::filesystem::temp_directory_path() /
                  std::string("hearth-knobs-").append(std::to_string(::getpid()));
    std::filesystem::create_directories(models_dir_);
    std::ofstream(models_dir_ / "tiny.gguf") << "x";
    config.models_dir = models_dir_.string();
    Status s = server_.start(config);
    ASSERT_TRUE(s.ok()) << s.to_string();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_.port());
    client_->set_read_timeout(10, 0);
  }
  void TearDown() override {
    server_.stop();
    std::filesystem::remove_all(models_dir_);
  }

  json post(const std::string& path, const json& body, int expect_status = 200) {
    auto r = client_->Post(path.c_str(), body.is_null() ? "" : body.dump(), "application/json");
    EXPECT_TRUE(r) << path;
    if (!r) return json();
    EXPECT_EQ(r->status, expect_status) << path << ": " << r->body;
    return json::parse(r->body, nullptr, false);
  }
  json get(const std::string& path) {
    auto r = client_->Get(path.c_str());
    EXPECT_TRUE(r && r->status == 200) << path;
    return r ? json::parse(r->body, nullptr, false) : json();
  }
  uint64_t counter(const std::string& name) {
    return get("/hearth/cache/counters")["counters"].value(name, uint64_t{0});
  }
  static std::string words(int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s.append("w").append(std::to_string(i % 37)).append(" ");
    return s;
  }

  std::filesystem::path models_dir_;
  testing::StubServer server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(CacheControlTest, PrefillReturnsAKeyThatAnExactRequestRestores) {
  const std::string prompt = words(40);
  json p = post("/hearth/prefill", {{"model", "tiny"}, {"prompt", prompt}});
  ASSERT_TRUE(p["finish_key"].is_string()) << p;
  EXPECT_EQ(p["finish_key"].get<std::string>().size(), 64u);
  EXPECT_EQ(p["cache_hit_kind"], "cold");
  EXPECT_EQ(p["committed_tokens"], p["prompt_tokens"]);
  ASSERT_TRUE(server_.service().cache_rows_json(0).ok());

  // The prompt with more text after it, pointed at the prefilled row by parent_key.
  json c = post("/v1/completions", {{"model", "tiny"},
                                    {"prompt", prompt + "and then"},
                                    {"max_tokens", 3},
                                    {"temperature", 0},
                                    {"parent_key", p["finish_key"]}});
  EXPECT_EQ(c["usage"]["prompt_tokens_details"]["cached_tokens"], p["prompt_tokens"]) << c;
  ASSERT_TRUE(c["finish_key"].is_string()) << c;
  EXPECT_NE(c["finish_key"], p["finish_key"]);

  // A second prefill of the same prompt finds its own row.
  json again = post("/hearth/prefill", {{"prompt", prompt}});
  EXPECT_NE(again["cache_hit_kind"], "cold");
  EXPECT_EQ(again["finish_key"], p["finish_key"]);

  // Chat messages work too (rendered like /v1/chat/completions).
  json chat = post("/hearth/prefill",
                   {{"messages", json::array({{{"role", "user"}, {"content", prompt}}})}});
  EXPECT_TRUE(chat["finish_key"].is_string()) << chat;
}

TEST_F(CacheControlTest, PrefillRefusesWhatItCannotHonour) {
  for (const char* field : {"temperature", "max_tokens", "stream", "cache_prompt"}) {
    json e = post("/hearth/prefill", {{"prompt", "hello"}, {field, 1}}, 400);
    EXPECT_EQ(e["error"]["param"], field) << e;
  }
  post("/hearth/prefill", json::object(), 400);
  post("/hearth/prefill", {{"prompt", "a"}, {"messages", json::array()}}, 400);
  json bad = post("/hearth/prefill", {{"prompt", "hello"}, {"parent_key", "xyz"}}, 400);
  EXPECT_EQ(bad["error"]["param"], "parent_key");
  json nomodel = post("/hearth/prefill", {{"model", "nope"}, {"prompt", "hello"}}, 404);
  EXPECT_FALSE(nomodel.is_discarded());
}

TEST_F(CacheControlTest, ChatRepliesCarryTheFinishKeyForTheNextTurn) {
  json first = post("/v1/chat/completions",
                    {{"messages", json::array({{{"role", "user"}, {"content", words(30)}}})},
                     {"max_tokens", 4},
                     {"temperature", 0}});
  ASSERT_TRUE(first["finish_key"].is_string()) << first;
  json msgs = json::array({{{"role", "user"}, {"content", words(30)}},
                           {{"role", "assistant"}, {"content", "ok"}},
                           {{"role", "user"}, {"content", "more"}}});
  json bad =
      post("/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 2}, {"parent_key", 5}}, 400);
  EXPECT_EQ(bad["error"]["param"], "parent_key");
  json anth = post(
      "/v1/messages",
      {{"messages", json::array({{{"role", "user"}, {"content", words(30)}}})}, {"max_tokens", 4}});
  EXPECT_TRUE(anth.contains("finish_key")) << anth;
  // Streaming: on the chunk with finish_reason, and on Anthropic's message_delta.
  auto stream =
      client_->Post("/v1/chat/completions",
                    json{{"messages", json::array({{{"role", "user"}, {"content", words(30)}}})},
                         {"max_tokens", 3},
                         {"stream", true}}
                        .dump(),
                    "application/json");
  ASSERT_TRUE(stream);
  EXPECT_NE(stream->body.find("\"finish_key\":\""), std::string::npos) << stream->body;
  auto astream =
      client_->Post("/v1/messages",
                    json{{"messages", json::array({{{"role", "user"}, {"content", words(30)}}})},
                         {"max_tokens", 3},
                         {"stream", true}}
                        .dump(),
                    "application/json");
  ASSERT_TRUE(astream);
  const size_t delta = astream->body.find("message_delta");
  ASSERT_NE(delta, std::string::npos);
  EXPECT_NE(astream->body.find("\"finish_key\":\"", delta), std::string::npos) << astream->body;
}

TEST_F(CacheControlTest, CachePromptFalseSkipsLookupAndSave) {
  const json body = {{"prompt", words(40)}, {"max_tokens", 3}, {"temperature", 0}};
  json warmup = post("/v1/completions", body);
  ASSERT_TRUE(warmup["finish_key"].is_string());
  json hit = post("/v1/completions", body);
  EXPECT_GT(hit["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 0);

  json off_body = body;
  off_body["cache_prompt"] = false;
  off_body["prompt"] = words(41);  // a new prompt: it must not be saved
  json off = post("/v1/completions", off_body);
  EXPECT_EQ(off["usage"]["prompt_tokens_details"]["cached_tokens"], 0) << off;
  EXPECT_TRUE(off["finish_key"].is_null()) << off;
  off_body["prompt"] = words(40);  // a cached prompt: not looked up
  off = post("/v1/completions", off_body);
  EXPECT_EQ(off["usage"]["prompt_tokens_details"]["cached_tokens"], 0) << off;
  EXPECT_EQ(off["choices"][0]["text"], hit["choices"][0]["text"]);

  off_body["cache_prompt"] = "no";
  json e = post("/v1/completions", off_body, 400);
  EXPECT_EQ(e["error"]["param"], "cache_prompt");
}

TEST_F(CacheControlTest, EvictAndShutdownOneModel) {
  post("/v1/completions", {{"prompt", words(40)}, {"max_tokens", 3}});
  // The idle sequence's cells are the finish row's tokens: its shutdown save is that
  // row again, dropped as a duplicate, or a new row.
  const uint64_t before = counter("saves_shutdown") + counter("duplicate_dropped");
  json s = post("/hearth/models/tiny/shutdown", nullptr);
  EXPECT_EQ(s["saved"], true);
  EXPECT_EQ(counter("saves_shutdown") + counter("duplicate_dropped"), before + 1);
  post("/v1/completions", {{"prompt", words(50)}, {"max_tokens", 3}});  // still serving
  json ev = post("/hearth/models/tiny/evict", nullptr);
  EXPECT_EQ(ev["evicted"], true);
  post("/hearth/models/nope/evict", nullptr, 404);
  post("/hearth/models/nope/shutdown", nullptr, 404);
}

TEST_F(CacheControlTest, PressureSchedulerAdmin) {
  json st = get("/hearth/cache/pressure");
  EXPECT_EQ(st["enabled"], false);
  EXPECT_EQ(st["source"], "noop");
  json chk = post("/hearth/cache/pressure/check", nullptr);
  EXPECT_EQ(chk["outcome"], "disabled") << chk;
  st = post("/hearth/cache/pressure", {{"enabled", true}});
  EXPECT_EQ(st["enabled"], true);
  EXPECT_EQ(get("/hearth/cache/pressure")["enabled"], true);
  chk = post("/hearth/cache/pressure/check", nullptr);
  EXPECT_EQ(chk["outcome"], "below_watermark") << chk;  // noop reads 0 used
  EXPECT_GE(get("/hearth/cache/pressure")["sampled_at_ms"].get<int64_t>(), 0);
  st = post("/hearth/cache/pressure", {{"enabled", false}});
  EXPECT_EQ(st["enabled"], false);
  json e = post("/hearth/cache/pressure", {{"enabled", "yes"}}, 400);
  EXPECT_EQ(e["error"]["param"], "enabled");
  e = post("/hearth/cache/pressure", {{"interval_ms", 5}}, 400);
  EXPECT_EQ(e["error"]["param"], "interval_ms");
}

TEST_F(CacheControlTest, LoadModelTakesTheKnobsAndNamesBadOnes) {
  json m = post("/hearth/models",
                {{"id", "knobby"},
                 {"path", "tiny.gguf"},
                 {"threads", 2},
                 {"n_batch", 64},
                 {"prefill_chunk", 16},
                 {"batch_strategy", "balanced"},
                 {"max_restarts", 2},
                 {"policy", {{"evict_save_timeout_ms", 100}}}},
                201);
  EXPECT_EQ(m["n_threads"], 2) << m;
  EXPECT_EQ(m["n_batch"], 64);
  EXPECT_EQ(m["batch_strategy"], "balanced");
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, json>>{{"threads", 999},
                                                 {"n_batch", 0},
                                                 {"prefill_chunk", -2},
                                                 {"batch_strategy", "fastest"},
                                                 {"fingerprint_mode", "sloppy"},
                                                 {"max_restarts", -1},
                                                 {"policy.write_bytes_per_s", -1}}) {
    json body = {{"path", "tiny.gguf"}};
    if (key.starts_with("policy."))
      body["policy"] = {{key.substr(7), value}};
    else
      body[key] = value;
    json e = post("/hearth/models", body, 400);
    EXPECT_EQ(e["error"]["param"], key) << e;
  }
}

}  // namespace
}  // namespace hearth::server
