// Sticky sessions over HTTP (issue #23 item 1), in-process over the real runtime with the
// stub backend: the session_id field and the X-Session-Id header on /v1/completions,
// /v1/chat/completions and /v1/messages, the continuation hit kind in replies, /metrics
// and /hearth/stats, the 400 / 404 no_session / 409 sticky_busy errors, edited history
// falling back to a normal admission, and GET / DELETE /hearth/sessions.
#include <httplib.h>

#include <gtest/gtest.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "server/model_settings.h"
#include "stub_server.h"

namespace hearth::server {
namespace {

using nlohmann::json;

class SessionsHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerConfig config;
    runtime::ModelConfig m = default_model_config();
    m.id = "tiny";
    m.model_path = "tiny.gguf";
    m.n_ctx = 2048;
    m.n_seq_max = 2;
    config.models.push_back(m);
    Status s = server_.start(config);
    ASSERT_TRUE(s.ok()) << s.to_string();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_.port());
    client_->set_read_timeout(10, 0);
  }
  void TearDown() override { server_.stop(); }

  struct Reply {
    int status = 0;
    json body;
    std::string session_header;
  };
  Reply post(const std::string& path, const json& body, const std::string& header = "") {
    httplib::Headers h;
    if (!header.empty()) h.emplace("X-Session-Id", header);
    auto r = client_->Post(path.c_str(), h, body.dump(), "application/json");
    EXPECT_TRUE(r) << path;
    if (!r) return {};
    return {r->status, json::parse(r->body, nullptr, false), r->get_header_value("X-Session-Id")};
  }
  json get(const std::string& path) {
    auto r = client_->Get(path.c_str());
    EXPECT_TRUE(r && r->status == 200) << path;
    return r ? json::parse(r->body, nullptr, false) : json();
  }
  std::string metrics() {
    auto r = client_->Get("/metrics");
    return r ? r->body : "";
  }
  static std::string hit(const json& reply) { return reply["usage"]["hearth"]["cache_hit"]; }
  static std::string words(int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s.append("w").append(std::to_string(i % 37)).append(" ");
    return s;
  }

  testing::StubServer server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(SessionsHttpTest, CompletionsContinueTheSessionWithNoLookup) {
  const std::string p1 = words(60);
  Reply t1 = post("/v1/completions",
                  {{"prompt", p1}, {"max_tokens", 6}, {"temperature", 0}, {"session_id", "c-1"}});
  ASSERT_EQ(t1.status, 200) << t1.body;
  EXPECT_EQ(t1.body["session_id"], "c-1");
  EXPECT_EQ(t1.session_header, "c-1");
  EXPECT_NE(hit(t1.body), "continuation");
  json sessions = get("/hearth/sessions")["sessions"];
  ASSERT_EQ(sessions.size(), 1u) << sessions;
  EXPECT_EQ(sessions[0]["id"], "c-1");
  EXPECT_EQ(sessions[0]["model"], "tiny");
  EXPECT_EQ(get("/hearth/models")["models"][0]["sessions"].size(), 1u);

  const uint64_t misses = get("/hearth/cache/counters")["counters"].value("misses", uint64_t{0});
  const std::string p2 = p1 + t1.body["choices"][0]["text"].get<std::string>() + " and more";
  Reply t2 = post("/v1/completions",
                  {{"prompt", p2}, {"max_tokens", 6}, {"temperature", 0}, {"session_id", "c-1"}});
  ASSERT_EQ(t2.status, 200) << t2.body;
  EXPECT_EQ(hit(t2.body), "continuation");
  EXPECT_GT(t2.body["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 60);
  EXPECT_EQ(get("/hearth/cache/counters")["counters"].value("misses", uint64_t{0}), misses);
  EXPECT_NE(metrics().find("hearth_request_prompt_starts_total{kind=\"continuation\"} 1"),
            std::string::npos);
  EXPECT_EQ(get("/hearth/stats")["cache"]["hits"]["continuation"], 1);

  // The same prompt without the session, cold elsewhere, gives the same text.
  Reply cold =
      post("/v1/completions",
           {{"prompt", p2}, {"max_tokens", 6}, {"temperature", 0}, {"cache_prompt", false}});
  ASSERT_EQ(cold.status, 200);
  EXPECT_EQ(cold.body["choices"][0]["text"], t2.body["choices"][0]["text"]);
  EXPECT_FALSE(cold.body.contains("session_id"));
}

TEST_F(SessionsHttpTest, ChatAndMessagesContinueThroughTheHeader) {
  server_.control().set_script("~Sure, noted.");
  const json user1 = {{"role", "user"}, {"content", words(40)}};
  Reply t1 =
      post("/v1/chat/completions",
           {{"messages", json::array({user1})}, {"max_tokens", 32}, {"temperature", 0}}, "chat-9");
  ASSERT_EQ(t1.status, 200) << t1.body;
  EXPECT_EQ(t1.body["session_id"], "chat-9");
  EXPECT_EQ(t1.session_header, "chat-9");
  const std::string answer = t1.body["choices"][0]["message"]["content"];
  const json msgs = json::array({user1,
                                 {{"role", "assistant"}, {"content", answer}},
                                 {{"role", "user"}, {"content", "ok?"}}});
  Reply t2 =
      post("/v1/chat/completions",
           {{"messages", msgs}, {"max_tokens", 32}, {"temperature", 0}, {"session_id", "chat-9"}},
           "chat-9");  // field and header agree
  ASSERT_EQ(t2.status, 200) << t2.body;
  EXPECT_EQ(hit(t2.body), "continuation") << t2.body;

  const json a1 = {{"role", "user"}, {"content", words(30)}};
  Reply m1 = post("/v1/messages", {{"messages", json::array({a1})}, {"max_tokens", 32}}, "anth");
  ASSERT_EQ(m1.status, 200) << m1.body;
  EXPECT_EQ(m1.body["session_id"], "anth");
  const std::string said = m1.body["content"][0]["text"];
  Reply m2 = post("/v1/messages",
                  {{"messages", json::array({a1,
                                             {{"role", "assistant"}, {"content", said}},
                                             {{"role", "user"}, {"content", "and?"}}})},
                   {"max_tokens", 32}},
                  "anth");
  ASSERT_EQ(m2.status, 200) << m2.body;
  EXPECT_EQ(m2.body["session_id"], "anth");
  // The whole first turn stayed resident: its prompt (cached and not) and its reply.
  const json& u1 = m1.body["usage"];
  EXPECT_EQ(m2.body["usage"]["cache_read_input_tokens"].get<int64_t>(),
            u1["input_tokens"].get<int64_t>() + u1["cache_read_input_tokens"].get<int64_t>() +
                u1["output_tokens"].get<int64_t>())
      << m2.body;
  EXPECT_EQ(get("/hearth/stats")["cache"]["hits"]["continuation"], 2);
}

TEST_F(SessionsHttpTest, EditedHistoryFallsBackAndIsCounted) {
  Reply t1 =
      post("/v1/completions", {{"prompt", words(50)}, {"max_tokens", 4}, {"session_id", "e"}});
  ASSERT_EQ(t1.status, 200);
  Reply t2 = post(
      "/v1/completions",
      {{"prompt", "something else entirely " + words(20)}, {"max_tokens", 4}, {"session_id", "e"}});
  ASSERT_EQ(t2.status, 200) << t2.body;
  EXPECT_NE(hit(t2.body), "continuation");
  EXPECT_EQ(get("/hearth/cache/counters")["counters"]["runtime_session_fallbacks"], 1);
  EXPECT_NE(metrics().find("hearth_session_fallbacks_total 1"), std::string::npos);
}

TEST_F(SessionsHttpTest, BadOrConflictingSessionIdsAre400) {
  Reply conflict = post("/v1/completions", {{"prompt", "hi"}, {"session_id", "a"}}, "b");
  EXPECT_EQ(conflict.status, 400);
  EXPECT_EQ(conflict.body["error"]["param"], "session_id");
  EXPECT_EQ(conflict.body["error"]["code"], "session_id_conflict");
  Reply bad = post("/v1/chat/completions",
                   {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                    {"session_id", "no spaces"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["param"], "session_id");
  Reply typed = post("/v1/completions", {{"prompt", "hi"}, {"session_id", 7}});
  EXPECT_EQ(typed.status, 400);
  EXPECT_EQ(typed.body["error"]["param"], "session_id");
  Reply uncached =
      post("/v1/completions", {{"prompt", "hi"}, {"session_id", "u"}, {"cache_prompt", false}});
  EXPECT_EQ(uncached.status, 400) << uncached.body;
  Reply header_bad =
      post("/v1/messages",
           {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}, {"max_tokens", 2}},
           "bad/id");
  EXPECT_EQ(header_bad.status, 400);
  EXPECT_TRUE(get("/hearth/sessions")["sessions"].empty());
}

TEST_F(SessionsHttpTest, BusySessionIs409AndReleaseIs404Afterwards) {
  server_.control().step_delay_us = 3000;
  std::thread long_turn([this] {
    httplib::Client c("127.0.0.1", server_.port());
    c.set_read_timeout(20, 0);
    auto r = c.Post("/v1/completions",
                    json{{"prompt", words(20)}, {"max_tokens", 120}, {"session_id", "busy"}}.dump(),
                    "application/json");
    EXPECT_TRUE(r && r->status == 200);
  });
  // Wait until the long turn holds a sequence.
  for (int i = 0; i < 2000 && server_.active("tiny") < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Reply second =
      post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 2}, {"session_id", "busy"}});
  EXPECT_EQ(second.status, 409) << second.body;
  EXPECT_EQ(second.body["error"]["code"], "sticky_busy");
  auto del_busy = client_->Delete("/hearth/sessions/busy");
  ASSERT_TRUE(del_busy);
  EXPECT_EQ(del_busy->status, 409) << del_busy->body;
  long_turn.join();
  server_.control().step_delay_us = 0;

  // The release saves the session's cells (an evict save; a duplicate of the finish
  // save's row when the policy saved that one already).
  auto saves = [this] {
    json c = get("/hearth/cache/counters")["counters"];
    return c.value("saves_evict", 0) + c.value("duplicate_dropped", 0);
  };
  const int before = saves();
  auto del = client_->Delete("/hearth/sessions/busy");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200) << del->body;
  EXPECT_TRUE(get("/hearth/sessions")["sessions"].empty());
  EXPECT_EQ(saves(), before + 1);
  auto again = client_->Delete("/hearth/sessions/busy");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 404);
  EXPECT_EQ(json::parse(again->body)["error"]["code"], "no_session");
  auto other_model = client_->Delete("/hearth/sessions/busy?model=tiny");
  ASSERT_TRUE(other_model);
  EXPECT_EQ(other_model->status, 404);
  EXPECT_EQ(json::parse(other_model->body)["error"]["code"], "no_session");
}

}  // namespace
}  // namespace hearth::server
