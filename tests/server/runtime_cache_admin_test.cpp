// The cache admin endpoints over the real runtime (stub backend, in-process): rows, evict
// by bytes with tier filters (validated), gc; and the [pressure] configuration reaching
// the cache's memory-pressure scheduler.
#include <httplib.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>

#include "server/http_server.h"
#include "server/model_settings.h"
#include "server/runtime_service.h"
#include "testing/stub_backend.h"

namespace hearth::server {
namespace {

using nlohmann::json;

class RuntimeCacheAdminTest : public ::testing::Test {
 protected:
  // `tweak` adjusts the configuration before the service starts.
  void start(const std::function<void(ServerConfig&)>& tweak = {}) {
    ServerConfig config;
    config.port = 0;
    runtime::ModelConfig m = default_model_config();
    m.id = "s";
    m.model_path = "stub-admin.gguf";
    m.n_seq_max = 1;
    m.policy.min_tokens = 8;
    m.policy.cold_min_tokens = 8;
    m.policy.boundary_align_tokens = 16;
    config.models.push_back(m);
    if (tweak) tweak(config);
    RuntimeServiceOptions options;
    options.backend_for = [](const runtime::ModelConfig& c) {
      return runtime::stub_factory_for(c);
    };
    auto service = make_runtime_service(config, std::move(options));
    ASSERT_TRUE(service.ok()) << service.status().to_string();
    service_ = std::move(service).value();
    server_ = std::make_unique<HttpServer>(*service_, config);
    ASSERT_TRUE(server_->bind().ok());
    thread_ = std::thread([this] { server_->run(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10, 0);
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    if (service_) service_->shutdown();
  }

  httplib::Result post(const std::string& path, const json& body) {
    return client_->Post(path.c_str(), body.dump(), "application/json");
  }

  // The rows once every save queued so far has published. A response is sent after its
  // saves are queued, and the listing includes queued saves as in flight, so "none in
  // flight" means the set is final.
  json wait_for_rows(size_t at_least) {
    json rows;
    for (int i = 0; i < 500; ++i) {
      auto r = client_->Get("/hearth/cache/rows");
      if (!r || r->status != 200) return json::array();
      rows = json::parse(r->body)["rows"];
      size_t available = 0;
      for (const auto& row : rows) available += row["status"] == "available" ? 1 : 0;
      if (available >= at_least && available == rows.size()) return rows;
      std::this_thread::sleep_for(std::chrono::milliseconds(4));
    }
    return rows;
  }

  static void expect_field_error(const httplib::Result& r, const std::string& field) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    json j = json::parse(r->body, nullptr, false);
    EXPECT_EQ(j["error"]["param"], field) << r->body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(field), std::string::npos) << r->body;
  }

  std::unique_ptr<ServiceApi> service_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(RuntimeCacheAdminTest, RowsEvictAndGcOverTheRuntime) {
  start();
  for (const char* prompt : {"the first prompt, long enough to be saved by the policy",
                             "a second and different prompt that is also long enough"}) {
    auto r = post("/v1/completions",
                  {{"model", "s"}, {"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
  }
  json rows = wait_for_rows(2);
  ASSERT_GE(rows.size(), 2u) << rows.dump();
  int64_t total = 0;
  for (const auto& row : rows) {
    EXPECT_EQ(row["status"], "available") << row.dump();
    EXPECT_EQ(row["key"].get<std::string>().size(), 64u);
    EXPECT_EQ(row["tier"], "ram");
    EXPECT_GT(row["bytes"].get<int64_t>(), 0);
    EXPECT_GE(row["tokens"].get<int64_t>(), 8);
    EXPECT_TRUE(row.contains("hits"));
    EXPECT_TRUE(row.contains("last_used_ns"));
    ASSERT_TRUE(row["fingerprint"].is_string()) << row.dump();
    EXPECT_EQ(row["fingerprint"].get<std::string>().size(), 64u);
    total += row["bytes"].get<int64_t>();
  }
  auto limited = client_->Get("/hearth/cache/rows?limit=1");
  ASSERT_TRUE(limited);
  EXPECT_EQ(json::parse(limited->body)["rows"].size(), 1u);

  // Validation names the field.
  expect_field_error(post("/hearth/cache/evict", {{"bytes", 1}, {"tiers", "ram"}}), "tiers");
  expect_field_error(post("/hearth/cache/evict", {{"bytes", 1}, {"tiers", {"nvme"}}}), "tiers");
  expect_field_error(post("/hearth/cache/evict", {{"tiers", {"ram"}}}), "bytes");
  expect_field_error(post("/hearth/cache/evict", {{"bytes", -5}}), "bytes");
  expect_field_error(post("/hearth/cache/evict", {{"bytes", 1}, {"tier", "tape"}}), "tier");

  // A tier holding nothing frees nothing; the ram tier frees at least one row.
  auto none = post("/hearth/cache/evict", {{"bytes", 1}, {"tiers", {"disk"}}});
  ASSERT_TRUE(none);
  ASSERT_EQ(none->status, 200) << none->body;
  EXPECT_EQ(json::parse(none->body)["freed_bytes"], 0);
  auto one = post("/hearth/cache/evict", {{"bytes", 1}, {"tiers", {"ram"}}});
  ASSERT_TRUE(one);
  ASSERT_EQ(one->status, 200) << one->body;
  const int64_t freed = json::parse(one->body)["freed_bytes"].get<int64_t>();
  EXPECT_GT(freed, 0);
  EXPECT_LT(freed, total);
  auto after = json::parse(client_->Get("/hearth/cache/rows")->body)["rows"];
  EXPECT_EQ(after.size(), rows.size() - 1);

  auto gc = post("/hearth/cache/gc", json::object());
  ASSERT_TRUE(gc);
  ASSERT_EQ(gc->status, 200) << gc->body;
  EXPECT_EQ(json::parse(gc->body)["removed"].get<size_t>(), after.size());
  EXPECT_TRUE(json::parse(client_->Get("/hearth/cache/rows")->body)["rows"].empty());
}

// [pressure] drives the cache's scheduler: with watermarks far below the machine's real
// memory use (source "system"), every poll finds "pressure" and evicts the RAM rows.
// The same run with the section disabled keeps them: the eviction is the scheduler's.
class PressureConfigTest : public RuntimeCacheAdminTest,
                           public ::testing::WithParamInterface<bool> {};

TEST_P(PressureConfigTest, SchedulerEvictsOnlyWhenEnabled) {
  const bool enabled = GetParam();
  start([enabled](ServerConfig& c) {
    c.pressure.enabled = enabled;
    c.pressure.source = "system";
    c.pressure.interval_ms = 10;
    c.pressure.high_watermark = 0.0002;
    c.pressure.low_watermark = 0.0001;
    c.pressure.min_evict_bytes = 1;
    c.pressure.evict_tiers = {"ram"};
  });
  auto r = post("/v1/completions", {{"model", "s"},
                                    {"prompt", "a prompt long enough to be saved by the policy"},
                                    {"max_tokens", 4},
                                    {"temperature", 0}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json counters, rows;
  for (int i = 0; i < 100; ++i) {  // up to 1 s: dozens of scheduler intervals
    counters = json::parse(client_->Get("/hearth/cache/counters")->body)["counters"];
    rows = json::parse(client_->Get("/hearth/cache/rows")->body)["rows"];
    // A save may publish after an eviction (the two are separate threads): wait for the
    // sweep that leaves nothing.
    if (counters.value("evictions", 0) > 0 && rows.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(counters.value("saves_finish", 0) + counters.value("saves_cold", 0), 0)
      << counters.dump();
  if (enabled) {
    EXPECT_GT(counters.value("evictions", 0), 0) << counters.dump();
    EXPECT_TRUE(rows.empty()) << rows.dump();
  } else {
    EXPECT_EQ(counters.value("evictions", 0), 0) << counters.dump();
    EXPECT_FALSE(rows.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(OnOff, PressureConfigTest, ::testing::Bool());

}  // namespace
}  // namespace hearth::server
