// Admin POST/DELETE routes without a body: `curl -X POST .../hearth/cache/gc` (no
// Content-Type, no Content-Length) is answered by the route, not by a generic
// "HTTP error 400"; a route with a required field names it.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>

#include "serve_process.h"
#include "server/model_settings.h"
#include "stub_server.h"

namespace hearth::server::testing {
namespace {

using nlohmann::json;

class AdminBodyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerConfig config;
    runtime::ModelConfig m = default_model_config();
    m.id = "tiny";
    m.model_path = "tiny.gguf";
    m.n_ctx = 256;
    config.models.push_back(m);
    Status s = server_.start(config);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  void TearDown() override { server_.stop(); }

  // A request with no body at all, as `curl -X METHOD URL` sends it.
  std::pair<int, json> bodyless(const std::string& method, const std::string& path) {
    const std::string reply =
        raw_exchange(server_.port(), method + " " + path +
                                         " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: "
                                         "close\r\n\r\n");
    const size_t at = reply.find("\r\n\r\n");
    json body =
        at == std::string::npos ? json() : json::parse(reply.substr(at + 4), nullptr, false);
    return {raw_status(reply), body};
  }

  StubServer server_;
};

TEST_F(AdminBodyTest, CacheGcWithoutBodyRuns) {
  auto [status, body] = bodyless("POST", "/hearth/cache/gc");
  EXPECT_EQ(status, 200) << body.dump();
  EXPECT_TRUE(body.contains("removed")) << body.dump();
}

TEST_F(AdminBodyTest, RequiredFieldsAreNamedWhenTheBodyIsMissing) {
  const std::pair<const char*, const char*> routes[] = {{"/hearth/cache/evict", "bytes"},
                                                        {"/hearth/tokenize", "text"},
                                                        {"/hearth/detokenize", "tokens"},
                                                        {"/hearth/models", "path"}};
  for (const auto& [path, field] : routes) {
    auto [status, body] = bodyless("POST", path);
    EXPECT_EQ(status, 400) << path << " " << body.dump();
    EXPECT_EQ(body["error"]["param"], field) << path << " " << body.dump();
  }
  auto [status, body] = bodyless("DELETE", "/hearth/models");
  EXPECT_EQ(status, 400) << body.dump();
  EXPECT_EQ(body["error"]["param"], "id") << body.dump();
}

TEST_F(AdminBodyTest, CacheGcRefusesFieldsItWouldIgnore) {
  httplib::Client c("127.0.0.1", server_.port());
  auto r = c.Post("/hearth/cache/gc", R"({"tier":"disk"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "tier") << r->body;
  auto empty = c.Post("/hearth/cache/gc", "{}", "application/json");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, 200) << empty->body;
}

}  // namespace
}  // namespace hearth::server::testing
