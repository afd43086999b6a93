// Acceptance tests against a real `hearth serve` process: the official OpenAI and
// Anthropic SDKs (Node, pinned by tests/server/node/package-lock.json), curl,
// restart on the same disk tier, client disconnects, auth, validation, SIGTERM with
// requests in flight, bad configuration. The model is the shared stories260K.gguf
// when the engine can load it, else the runtime's deterministic stub backend
// (logged); tests that need a slow, predictable model use the stub directly.
#include <httplib.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "protected_routes.h"
#include "serve_process.h"

namespace hearth::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ServeProcess;

// Sets an environment variable for one scope; the server child inherits it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

int run_shell(const std::string& cmd, std::string* output = nullptr) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  std::string out;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  if (output) *output = out;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

fs::path scratch_dir(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("hearth-serve-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Writes a config whose save policy lets short test prompts be cached; `extra` is
// more TOML (tables other than [[models]]).
std::string write_config(const fs::path& dir, const std::string& model_line,
                         const std::string& extra = "") {
  const fs::path p = dir / "serve.toml";
  std::ofstream(p) << extra << "\n[[models]]\n"
                   << model_line << "\n"
                   << "context = 1024\nn_seq_max = 4\n"
                   << "policy = { min_tokens = 8, cold_min_tokens = 8, boundary_trim_tokens = 0, "
                      "boundary_align_tokens = 8, continued_interval = 64 }\n";
  return p.string();
}

// Starts a server on the best model available; `model_id` receives its id.
bool start_any(ServeProcess& proc, const fs::path& dir, std::vector<std::string> extra,
               std::string& model_id) {
  const fs::path real = fs::path(HEARTH_SHARED_DIR) / "models" / "stories260K.gguf";
  if (fs::exists(real)) {
    std::vector<std::string> args = {
        "--config", write_config(dir, "id = \"stories\"\npath = \"" + real.string() + "\"")};
    args.insert(args.end(), extra.begin(), extra.end());
    if (proc.start(args)) {
      model_id = "stories";
      return true;
    }
    std::fprintf(stderr, "[ INFO ] engine cannot serve %s yet (%s); using the stub backend\n",
                 real.c_str(), proc.log().substr(0, 300).c_str());
  }
  std::vector<std::string> args = {"--backend", "stub", "--config",
                                   write_config(dir, "id = \"tiny\"\npath = \"stub.gguf\"")};
  args.insert(args.end(), extra.begin(), extra.end());
  model_id = "tiny";
  return proc.start(args);
}

// Starts a server on the stub backend ("tiny"): deterministic, never emits EOS, and as
// slow per scheduler step as HEARTH_STUB_STEP_DELAY_US says.
bool start_stub(ServeProcess& proc, const fs::path& dir, const std::string& extra_toml = "",
                std::vector<std::string> extra_args = {}) {
  std::vector<std::string> args = {
      "--backend", "stub", "--config",
      write_config(dir, "id = \"tiny\"\npath = \"stub.gguf\"", extra_toml)};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  return proc.start(args);
}

// The value of one exposed sample, `series` being the name plus labels exactly as
// /metrics prints them; -1 when absent.
double metric(const std::string& text, const std::string& series) {
  const std::string needle = series + " ";
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
    if (pos == 0 || text[pos - 1] == '\n') return std::atof(text.c_str() + pos + needle.size());
  }
  return -1;
}

std::string get_metrics(int port, const httplib::Headers& headers = {}) {
  httplib::Client c("127.0.0.1", port);
  auto r = c.Get("/metrics", headers);
  return r && r->status == 200 ? r->body : std::string();
}

// Polls /metrics until `done(text)` holds (bounded); returns the last text.
template <typename Pred>
std::string wait_metrics(int port, Pred done, int timeout_ms = 5000) {
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  do {
    text = get_metrics(port);
    if (done(text)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (std::chrono::steady_clock::now() < deadline);
  return text;
}

bool skip_node_tests() {
  const char* v = std::getenv("HEARTH_SKIP_NODE_TESTS");
  return v != nullptr && std::string(v) == "1";
}

json chat(httplib::Client& c, const std::string& model, const std::string& content, int max_tokens,
          httplib::Headers headers = {}) {
  json body = {{"model", model},
               {"messages", json::array({{{"role", "user"}, {"content", content}}})},
               {"max_tokens", max_tokens},
               {"temperature", 0}};
  auto r = c.Post("/v1/chat/completions", headers, body.dump(), "application/json");
  if (!r) return json{{"transport_error", httplib::to_string(r.error())}};
  json j = json::parse(r->body, nullptr, false);
  j["http_status"] = r->status;
  return j;
}

// The official SDKs, at the versions package-lock.json pins, against a real server. An
// install failure fails the test: `make test` must not pass without proving SDK
// compatibility. HEARTH_SKIP_NODE_TESTS=1 (no Node, no registry) skips it loudly.
TEST(ServeAcceptance, OfficialSdksWork) {
  const fs::path node_src = fs::path(__FILE__).parent_path() / "node";
  const fs::path node_dir = fs::path(HEARTH_CLI_PATH).parent_path() / "node-tests";
  std::string out;
  const int setup_rc = run_shell(
      "bash '" + (node_src / "setup.sh").string() + "' '" + node_dir.string() + "'", &out);
  if (setup_rc != 0) {
    if (skip_node_tests()) {
      std::fprintf(stderr,
                   "\n*** SKIPPED: official SDK test (HEARTH_SKIP_NODE_TESTS=1); the pinned SDKs "
                   "could not be installed:\n%s\n",
                   out.substr(0, 800).c_str());
      GTEST_SKIP() << "HEARTH_SKIP_NODE_TESTS=1: official SDK compatibility NOT tested";
    }
    FAIL() << "tests/server/node/setup.sh (npm ci of the pinned openai and @anthropic-ai/sdk) "
              "failed with status "
           << setup_rc << "; install Node.js and npm (make deps) or set HEARTH_SKIP_NODE_TESTS=1 "
           << "to skip knowingly:\n"
           << out.substr(0, 2000);
  }

  const fs::path dir = scratch_dir("sdk");
  ServeProcess proc;
  std::string model;
  ASSERT_TRUE(start_any(proc, dir, {"--api-key", "test-key"}, model)) << proc.log();
  const int rc = run_shell("cd '" + node_dir.string() + "' && timeout 120 node sdk_check.mjs " +
                               proc.url() + " test-key " + model,
                           &out);
  EXPECT_EQ(rc, 0) << out << "\nserver log:\n" << proc.log();
  EXPECT_NE(out.find("ALL OK"), std::string::npos) << out;
  EXPECT_EQ(proc.stop(), 0) << proc.log();
  fs::remove_all(dir);
}

// The acceptance's "and with curl": streaming (SSE `data:` chunks, `data: [DONE]`) and
// non-streaming chat, a second turn reading the cache, embeddings, the model list.
TEST(ServeAcceptance, CurlChatEmbeddingsAndModels) {
  std::string out;
  ASSERT_EQ(run_shell("command -v curl", &out), 0) << "curl is missing (make deps installs it)";
  const fs::path dir = scratch_dir("curl");
  ServeProcess proc;
  std::string model;
  ASSERT_TRUE(start_any(proc, dir, {"--api-key", "curl-key"}, model)) << proc.log();
  // -f: a non-2xx status is a non-zero exit; -N: no buffering, as a streaming client.
  auto curl = [&](const std::string& path, const json* body, std::string& reply) {
    std::string cmd =
        "curl -sSN --fail-with-body --max-time 60 -H 'Authorization: Bearer curl-key' ";
    if (body) {
      const fs::path f = dir / "body.json";
      std::ofstream(f) << body->dump();
      cmd += "-H 'Content-Type: application/json' --data-binary @'" + f.string() + "' ";
    }
    return run_shell(cmd + proc.url() + path, &reply);
  };
  const json messages =
      json::array({{{"role", "system"}, {"content", "You are terse."}},
                   {{"role", "user"}, {"content", "Tell me a story about a fox."}}});
  json req = {{"model", model}, {"messages", messages}, {"max_tokens", 12}, {"temperature", 0}};

  // Streaming first: every event is `data: {chunk}` and the stream ends with [DONE].
  req["stream"] = true;
  std::string sse;
  ASSERT_EQ(curl("/v1/chat/completions", &req, sse), 0) << sse;
  std::vector<std::string> data;
  std::istringstream lines(sse);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    ASSERT_EQ(line.rfind("data: ", 0), 0u) << "not an SSE data line: " << line;
    data.push_back(line.substr(6));
  }
  ASSERT_GE(data.size(), 3u) << sse;
  EXPECT_EQ(data.back(), "[DONE]") << sse;
  std::string streamed;
  for (size_t i = 0; i + 1 < data.size(); ++i) {
    const json chunk = json::parse(data[i], nullptr, false);
    ASSERT_FALSE(chunk.is_discarded()) << data[i];
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    const json& delta = chunk["choices"][0]["delta"];
    if (delta.contains("content")) streamed += delta["content"].get<std::string>();
  }
  EXPECT_FALSE(streamed.empty());

  // Non-streaming: the same greedy text.
  req.erase("stream");
  std::string reply;
  ASSERT_EQ(curl("/v1/chat/completions", &req, reply), 0) << reply;
  const json first = json::parse(reply, nullptr, false);
  ASSERT_FALSE(first.is_discarded()) << reply;
  const std::string text = first["choices"][0]["message"]["content"].get<std::string>();
  EXPECT_EQ(text, streamed) << "streaming and non-streaming greedy text differ";
  EXPECT_GT(first["usage"]["completion_tokens"].get<int>(), 0);

  // Second turn: the first turn's prompt and reply come from the cache.
  json turn2 = req;
  turn2["messages"].push_back({{"role", "assistant"}, {"content", text}});
  turn2["messages"].push_back({{"role", "user"}, {"content", "And then?"}});
  ASSERT_EQ(curl("/v1/chat/completions", &turn2, reply), 0) << reply;
  const json second = json::parse(reply, nullptr, false);
  ASSERT_FALSE(second.is_discarded()) << reply;
  EXPECT_GT(second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0) << reply;

  const json emb_req = {{"model", model}, {"input", json::array({"hello world", "fox"})}};
  ASSERT_EQ(curl("/v1/embeddings", &emb_req, reply), 0) << reply;
  const json emb = json::parse(reply, nullptr, false);
  ASSERT_FALSE(emb.is_discarded()) << reply;
  ASSERT_EQ(emb["data"].size(), 2u) << reply;
  for (const auto& d : emb["data"]) {
    ASSERT_TRUE(d["embedding"].is_array());
    EXPECT_GT(d["embedding"].size(), 0u);
    for (const auto& x : d["embedding"]) ASSERT_TRUE(x.is_number()) << d.dump().substr(0, 200);
  }

  ASSERT_EQ(curl("/v1/models", nullptr, reply), 0) << reply;
  const json models = json::parse(reply, nullptr, false);
  ASSERT_FALSE(models.is_discarded()) << reply;
  EXPECT_EQ(models["object"], "list");
  ASSERT_FALSE(models["data"].empty()) << reply;
  EXPECT_EQ(models["data"][0]["id"], model);

  // And curl without the key is refused.
  ASSERT_EQ(run_shell("curl -s -o /dev/null -w '%{http_code}' " + proc.url() + "/v1/models", &out),
            0);
  EXPECT_EQ(out, "401");
  EXPECT_EQ(proc.stop(), 0) << proc.log();
  fs::remove_all(dir);
}

// Every directory under `root` must be 0700 and every file 0600; returns the file count.
int expect_private_tree(const fs::path& root) {
  int files = 0;
  EXPECT_EQ(fs::status(root).permissions() & fs::perms::all, fs::perms::owner_all) << root;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const auto perms = e.symlink_status().permissions() & fs::perms::all;
    if (e.is_directory()) {
      EXPECT_EQ(perms, fs::perms::owner_all) << e.path() << " must be 0700";
    } else {
      ++files;
      EXPECT_EQ(perms, fs::perms::owner_read | fs::perms::owner_write)
          << e.path() << " must be 0600";
    }
  }
  return files;
}

TEST(ServeAcceptance, RestartOnSameDiskTierServesWarm) {
  const fs::path dir = scratch_dir("restart");
  const std::string cache_dir = (dir / "kvc").string();
  const std::string prompt =
      "The fox sat by the hearth and watched the embers glow all night long.";
  std::string model;
  json before;
  {
    ServeProcess proc;
    ASSERT_TRUE(start_any(proc, dir, {"--cache-dir", cache_dir}, model)) << proc.log();
    httplib::Client c("127.0.0.1", proc.port());
    before = chat(c, model, prompt, 12);
    ASSERT_EQ(before["http_status"], 200) << before.dump();
    EXPECT_EQ(proc.stop(), 0) << "SIGTERM must exit 0\n" << proc.log();
  }
  // What the first server saved is private to this user.
  EXPECT_GT(expect_private_tree(cache_dir), 0) << "no cache file was saved in " << cache_dir;

  ServeProcess proc;
  ASSERT_TRUE(start_any(proc, dir, {"--cache-dir", cache_dir}, model)) << proc.log();
  httplib::Client c("127.0.0.1", proc.port());
  json after = chat(c, model, prompt, 12);
  ASSERT_EQ(after["http_status"], 200) << after.dump();
  EXPECT_EQ(after["choices"][0]["message"]["content"], before["choices"][0]["message"]["content"])
      << "greedy text after restart must match";
  EXPECT_GT(after["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0)
      << "the restarted server must restore the prompt from the disk tier: " << after.dump();
  EXPECT_EQ(proc.stop(), 0);
  fs::remove_all(dir);
}

// "A streaming client that closes early frees its sequence within one tick": the
// runtime counts scheduler steps (forward passes) and, per cancelled request, the
// steps that started between the cancel and the sequence being freed; /metrics
// exposes both. The stub runs 5 ms per step, so 900 tokens would take 4.5 s.
TEST(ServeAcceptance, DisconnectedStreamIsFreedWithinOneTick) {
  const fs::path dir = scratch_dir("disconnect");
  ScopedEnv delay("HEARTH_STUB_STEP_DELAY_US", "5000");
  ServeProcess proc;
  ASSERT_TRUE(start_stub(proc, dir)) << proc.log();
  const std::string active = "hearth_model_active_sequences{model=\"tiny\"}";
  const std::string steps = "hearth_model_scheduler_steps_total{model=\"tiny\"}";
  httplib::Client c("127.0.0.1", proc.port());
  json body = {{"model", "tiny"},
               {"messages", json::array({{{"role", "user"}, {"content", "go on forever"}}})},
               {"max_tokens", 900},
               {"stream", true}};
  int chunks = 0;
  double steps_at_close = -1;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
    if (++chunks < 3) return true;
    steps_at_close = metric(get_metrics(proc.port()), steps);
    return false;  // the client closes the connection
  };
  (void)c.send(req);
  c.stop();
  ASSERT_GE(chunks, 3);
  ASSERT_GT(steps_at_close, 0);
  const std::string m = wait_metrics(proc.port(), [&](const std::string& t) {
    return metric(t, active) == 0 && metric(t, "hearth_cancel_free_steps_count") >= 1;
  });
  EXPECT_EQ(metric(m, active), 0) << m;
  EXPECT_EQ(metric(m, "hearth_client_disconnects_total"), 1) << m;
  EXPECT_EQ(metric(m, "hearth_cancelled_generations_total"), 1) << m;
  // The precise claim: freed within one scheduler step of the cancel.
  EXPECT_EQ(metric(m, "hearth_cancel_free_steps_count"), 1) << m;
  EXPECT_EQ(metric(m, "hearth_cancel_free_steps_bucket{le=\"1\"}"), 1)
      << "the sequence ran more than one step after its cancel\n"
      << m;
  // And from the client's side: the model stopped soon after the close, far from the
  // ~900 steps the request asked for. The server notices at its next write or two; the
  // bound leaves a loaded machine ~1 s of HTTP-thread lag.
  const double steps_after_close = metric(m, steps) - steps_at_close;
  EXPECT_LT(steps_after_close, 200) << m;
  EXPECT_EQ(proc.stop(), 0);
  fs::remove_all(dir);
}

TEST(ServeAcceptance, AuthAndValidation) {
  const fs::path dir = scratch_dir("auth");
  ServeProcess proc;
  std::string model;
  ASSERT_TRUE(start_any(proc, dir, {"--api-key", "k1"}, model)) << proc.log();
  httplib::Client c("127.0.0.1", proc.port());
  for (const httplib::Headers& h : testing::bad_credentials("k1")) {
    EXPECT_EQ(c.Get("/health", h)->status, 200) << "/health must stay open";
  }
  for (const testing::Route& route : testing::protected_routes()) {
    for (const httplib::Headers& h : testing::bad_credentials("k1")) {
      auto r = testing::send(c, route, h);
      ASSERT_TRUE(r) << route.method << " " << route.path;
      EXPECT_EQ(r->status, 401) << route.method << " " << route.path << " with "
                                << (h.empty() ? "no key"
                                              : h.begin()->first + ": " + h.begin()->second);
    }
    auto ok = testing::send(c, route, {{"x-api-key", "k1"}});
    ASSERT_TRUE(ok) << route.path;
    EXPECT_NE(ok->status, 401) << route.method << " " << route.path << ": " << ok->body;
  }
  const httplib::Headers auth = {{"Authorization", "Bearer k1"}};
  auto post = [&](const std::string& body) {
    return c.Post("/v1/chat/completions", auth, body, "application/json");
  };
  auto malformed = post("{\"model\":");
  EXPECT_EQ(malformed->status, 400);
  auto wrong_type = post(json{{"model", model}, {"messages", "hello"}}.dump());
  EXPECT_EQ(wrong_type->status, 400);
  EXPECT_NE(wrong_type->body.find("messages"), std::string::npos);
  auto unknown = chat(c, "missing-model", "hi", 4, auth);
  EXPECT_EQ(unknown["http_status"], 404);
  EXPECT_NE(unknown["error"]["message"].get<std::string>().find("missing-model"),
            std::string::npos);
  auto too_long = chat(c, model, std::string(6000, 'x') + " " + std::string(6000, 'y'), 4, auth);
  EXPECT_EQ(too_long["http_status"], 400) << too_long.dump().substr(0, 300);
  EXPECT_EQ(too_long["error"]["code"], "context_length_exceeded");
  auto ok = chat(c, model, "still serving?", 4, auth);
  EXPECT_EQ(ok["http_status"], 200) << ok.dump();
  EXPECT_EQ(proc.stop(), 0);
  fs::remove_all(dir);
}

// A path or header that is not valid UTF-8 once ended the process: the 404 handler put
// the path into a JSON error and the serialiser threw outside any handler. Each such
// request is now a 400 (with and without a key) and the server keeps serving.
TEST(ServeAcceptance, InvalidUtf8RequestsCannotStopTheServer) {
  const fs::path dir = scratch_dir("utf8");
  for (const bool with_key : {false, true}) {
    ServeProcess proc;
    std::string model;
    std::vector<std::string> extra;
    if (with_key) extra = {"--api-key", "k1"};
    ASSERT_TRUE(start_any(proc, dir, extra, model)) << proc.log();
    const std::string key = with_key ? "Authorization: Bearer k1\r\n" : "";
    const std::vector<std::string> attacks = {
        "GET /x%FF HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + key + "\r\n",
        "GET /v1/models/%FF HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + key + "\r\n",
        "GET /v1/models/%C0%AF HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + key + "\r\n",
        "GET /x%00y HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + key + "\r\n",
        "GET /health?q=%FF HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        "GET /v1/models HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nX-Junk: \xff\xfe\r\n" +
            key + "\r\n",
        "POST /v1/chat/completions%FF HTTP/1.1\r\nHost: localhost\r\nConnection: "
        "close\r\nContent-Type: "
        "application/json\r\nContent-Length: 2\r\n" +
            key + "\r\n{}",
    };
    for (const std::string& attack : attacks) {
      const std::string reply = testing::raw_exchange(proc.port(), attack);
      EXPECT_EQ(testing::raw_status(reply), 400)
          << (with_key ? "with key: " : "no key: ") << attack << "\n--> " << reply.substr(0, 300);
      httplib::Client c("127.0.0.1", proc.port());
      auto health = c.Get("/health");
      ASSERT_TRUE(health) << "server died after: " << attack << "\n" << proc.log();
      EXPECT_EQ(health->status, 200);
    }
    httplib::Client c("127.0.0.1", proc.port());
    const httplib::Headers auth = {{"Authorization", "Bearer k1"}};
    auto ok = chat(c, model, "still serving?", 4, with_key ? auth : httplib::Headers{});
    EXPECT_EQ(ok["http_status"], 200) << ok.dump();
    EXPECT_EQ(proc.stop(), 0) << proc.log();
  }
  fs::remove_all(dir);
}

TEST(ServeAcceptance, ApiKeyFromEnvironment) {
  const fs::path dir = scratch_dir("envkey");
  ScopedEnv key("HEARTH_API_KEY", "env-key");
  ServeProcess proc;
  ASSERT_TRUE(start_stub(proc, dir)) << proc.log();
  httplib::Client c("127.0.0.1", proc.port());
  EXPECT_EQ(c.Get("/health")->status, 200);
  EXPECT_EQ(c.Get("/v1/models")->status, 401);
  EXPECT_EQ(c.Get("/v1/models", {{"Authorization", "Bearer wrong"}})->status, 401);
  EXPECT_EQ(c.Get("/v1/models", {{"Authorization", "Bearer env-key"}})->status, 200);
  EXPECT_EQ(c.Get("/metrics", {{"x-api-key", "env-key"}})->status, 200);
  EXPECT_EQ(proc.stop(), 0);
  fs::remove_all(dir);
}

// SIGTERM with a request in flight: the listener closes, the request finishes within
// server.shutdown_grace_ms (default 5 s), the shutdown saves run, and the exit is 0.
TEST(ServeAcceptance, SigtermLetsInFlightRequestFinish) {
  const fs::path dir = scratch_dir("sigterm");
  ScopedEnv delay("HEARTH_STUB_STEP_DELAY_US", "10000");  // 60 tokens: ~0.6 s
  ServeProcess proc;
  ASSERT_TRUE(start_stub(proc, dir)) << proc.log();
  json result;
  std::thread client([&] {
    httplib::Client c("127.0.0.1", proc.port());
    c.set_read_timeout(30, 0);
    result = chat(c, "tiny", "finish me please", 60);
  });
  const std::string m = wait_metrics(proc.port(), [](const std::string& t) {
    return metric(t, "hearth_model_active_sequences{model=\"tiny\"}") == 1;
  });
  proc.signal(SIGTERM);
  client.join();
  EXPECT_EQ(metric(m, "hearth_model_active_sequences{model=\"tiny\"}"), 1) << m;
  EXPECT_EQ(result["http_status"], 200) << result.dump();
  EXPECT_EQ(result["usage"]["completion_tokens"], 60) << result.dump();
  EXPECT_EQ(result["choices"][0]["finish_reason"], "length") << result.dump();
  EXPECT_EQ(proc.wait(), 0) << proc.log();
  fs::remove_all(dir);
}

// Past the grace period a stream is cancelled cleanly: it still ends with a
// finish_reason chunk and `data: [DONE]`, and the process exits 0.
TEST(ServeAcceptance, SigtermAfterGraceCancelsStreamCleanly) {
  const fs::path dir = scratch_dir("sigterm-grace");
  ScopedEnv delay("HEARTH_STUB_STEP_DELAY_US", "10000");  // 800 tokens: ~8 s
  ServeProcess proc;
  ASSERT_TRUE(start_stub(proc, dir, "[server]\nshutdown_grace_ms = 200\n")) << proc.log();
  std::string body;
  int status = 0;
  std::thread client([&] {
    httplib::Client c("127.0.0.1", proc.port());
    c.set_read_timeout(30, 0);
    json req = {{"model", "tiny"},
                {"messages", json::array({{{"role", "user"}, {"content", "a long one"}}})},
                {"max_tokens", 800},
                {"stream", true}};
    auto r = c.Post("/v1/chat/completions", req.dump(), "application/json");
    if (r) {
      status = r->status;
      body = r->body;
    }
  });
  wait_metrics(proc.port(), [](const std::string& t) {
    return metric(t, "hearth_model_active_sequences{model=\"tiny\"}") == 1;
  });
  const auto signalled = std::chrono::steady_clock::now();
  proc.signal(SIGTERM);
  client.join();
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, std::chrono::seconds(4))
      << "the stream outlived the 200 ms grace period";
  EXPECT_EQ(status, 200);
  const std::string done = "data: [DONE]\n\n";
  ASSERT_GE(body.size(), done.size());
  EXPECT_EQ(body.substr(body.size() - done.size()), done) << body.substr(0, 400);
  EXPECT_NE(body.find("\"finish_reason\":\"stop\""), std::string::npos) << body.substr(0, 400);
  EXPECT_EQ(proc.wait(), 0) << proc.log();
  fs::remove_all(dir);
}

TEST(ServeAcceptance, BadConfigFailsAtStartNamingTheKey) {
  const fs::path dir = scratch_dir("badcfg");
  std::ofstream(dir / "bad.toml") << "[limits]\nmax_tokens = \"many\"\n";
  std::string out;
  const int rc = run_shell(
      std::string(HEARTH_CLI_PATH) + " serve --port 0 --config " + (dir / "bad.toml").string(),
      &out);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("limits.max_tokens"), std::string::npos) << out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace hearth::server
