// CORS (issue #22 item 7): off by default; with server.cors_origins an allowed origin's
// preflight is answered (before the key check) and its API calls carry
// Access-Control-Allow-Origin, while other origins and the admin endpoints get nothing.
#include <httplib.h>

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "server/model_settings.h"
#include "stub_server.h"

namespace hearth::server {
namespace {

constexpr const char* kApp = "https://app.example";

class CorsTest : public ::testing::Test {
 protected:
  void start(std::vector<std::string> origins, std::string api_key = "") {
    ServerConfig config;
    config.cors_origins = std::move(origins);
    config.api_key = std::move(api_key);
    runtime::ModelConfig m = default_model_config();
    m.id = "tiny";
    m.model_path = "tiny.gguf";
    config.models.push_back(m);
    Status s = server_.start(config);
    ASSERT_TRUE(s.ok()) << s.to_string();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_.port());
  }
  void TearDown() override { server_.stop(); }

  httplib::Result preflight(const std::string& origin, const std::string& path) {
    httplib::Request req;
    req.method = "OPTIONS";
    req.path = path;
    req.headers = {{"Origin", origin},
                   {"Access-Control-Request-Method", "POST"},
                   {"Access-Control-Request-Headers", "authorization, content-type"}};
    return client_->send(req);
  }
  httplib::Result chat(const std::string& origin, const std::string& key = "") {
    httplib::Headers h = {{"Origin", origin}};
    if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
    return client_->Post("/v1/chat/completions", h,
                         R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":2})",
                         "application/json");
  }

  testing::StubServer server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(CorsTest, OffByDefault) {
  start({});
  auto pre = preflight(kApp, "/v1/chat/completions");
  ASSERT_TRUE(pre);
  EXPECT_NE(pre->status, 204);
  EXPECT_FALSE(pre->has_header("Access-Control-Allow-Origin"));
  auto r = chat(kApp);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
}

TEST_F(CorsTest, AnAllowedOriginIsServedOthersAreNot) {
  start({kApp}, "sekrit");
  auto pre = preflight(kApp, "/v1/chat/completions");
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 204) << pre->body;  // no key: preflights carry none
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), kApp);
  EXPECT_NE(pre->get_header_value("Access-Control-Allow-Headers").find("Authorization"),
            std::string::npos);
  EXPECT_NE(pre->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  auto r = chat(kApp, "sekrit");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), kApp);
  // The key is still required for the call itself, and the error is readable by the page.
  auto unauthorized = chat(kApp);
  ASSERT_TRUE(unauthorized);
  EXPECT_EQ(unauthorized->status, 401);
  EXPECT_EQ(unauthorized->get_header_value("Access-Control-Allow-Origin"), kApp);
  // Another origin gets no CORS header (the browser then hides the reply from it).
  auto other = preflight("https://evil.example", "/v1/chat/completions");
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->has_header("Access-Control-Allow-Origin"));
  // Admin endpoints stay same-origin only, whatever the list says.
  auto admin =
      client_->Post("/hearth/cache/gc", {{"Origin", kApp}, {"Authorization", "Bearer sekrit"}},
                    "{}", "application/json");
  ASSERT_TRUE(admin);
  EXPECT_EQ(admin->status, 403);
  EXPECT_FALSE(admin->has_header("Access-Control-Allow-Origin"));
}

TEST_F(CorsTest, AStarAllowsAnyOrigin) {
  start({"*"});
  auto r = chat("http://localhost:5173");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "http://localhost:5173");
}

}  // namespace
}  // namespace hearth::server
