// The Redis remote tier under live HTTP traffic, through real `hearth serve` processes
// on the engine and stories260K.gguf, with a real redis-server (docs/scale-out.md,
// "Failure modes"):
//   - Redis SIGKILLed while several clients send completions: every request succeeds,
//     the failures show in /metrics, and after Redis restarts on the same port the
//     tier recovers by itself (rows are published again, and read back verified by
//     another cache instance).
//   - a row damaged in Redis: the node that pulls it answers exactly as a cold run (a
//     miss), counts it, and deletes it from Redis.
#include <httplib.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/redis_client.h"
#include "cache/remote_tier.h"
#include "metrics_probe.h"
#include "serve_fixture.h"
#include "serve_process.h"
#include "testing/redis_server.h"

namespace hearth::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::get_metrics;
using testing::metric;
using testing::ServeProcess;

const std::string kPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park with her friends. One day, she saw a big red ball";

constexpr const char* kWon = "hearth_cache_remote_publishes_total{outcome=\"won\"}";
constexpr const char* kErrors = "hearth_cache_remote_failures_total{kind=\"error\"}";
constexpr const char* kSkipped = "hearth_cache_remote_failures_total{kind=\"skipped_degraded\"}";
constexpr const char* kRecoveries = "hearth_cache_remote_recoveries_total";
constexpr const char* kHits = "hearth_cache_remote_fetches_total{outcome=\"hit\"}";
constexpr const char* kCorrupt = "hearth_cache_remote_fetches_total{outcome=\"corrupt\"}";
constexpr const char* kDeleted = "hearth_cache_remote_corrupt_deleted_total";
constexpr const char* kLearned = "hearth_cache_remote_index_entries_total";

// A sample of /metrics, absent counted as 0.
double sample(const std::string& text, const std::string& series) {
  return std::max(0.0, metric(text, series));
}

struct Reply {
  int status = 0;  // 0: no HTTP response at all
  json body;
};

Reply complete(int port, const std::string& prompt, int max_tokens, json extra = json::object()) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(60, 0);
  json body = {
      {"model", "stories"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
  body.update(extra);
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  Reply out;
  if (!r) return out;
  out.status = r->status;
  out.body = json::parse(r->body, nullptr, false);
  return out;
}

class RemoteTierHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!redis_.available()) GTEST_SKIP() << redis_.why();
    dir_ = testing::scratch_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // A node on the shared Redis: short timeouts and backoff so a test sees the tier
  // degrade and recover in well under a second.
  std::unique_ptr<ServeProcess> start_node(const std::string& name) {
    const fs::path model = fs::path(HEARTH_SHARED_DIR) / "models" / "stories260K.gguf";
    const fs::path d = dir_ / name;
    fs::create_directories(d);
    const std::string remote = std::string("[tiers.remote]\nurl = \"")
                                   .append(redis_.url())
                                   .append("\"\ntimeout_ms = 300\nbackoff_max_ms = 200\n")
                                   .append("index_poll_ms = 50\n");
    auto node = std::make_unique<ServeProcess>();
    const bool up = node->start(
        {"--config",
         testing::write_config(d, "id = \"stories\"\npath = \"" + model.string() + "\"", remote),
         "--node-id", name, "-q"},
        60000);
    EXPECT_TRUE(up) << node->log();
    return up ? std::move(node) : nullptr;
  }

  // Polls `node`'s /metrics until `done` holds or `timeout_ms` passes; the last text.
  template <typename Pred>
  static std::string wait_for(const ServeProcess& node, Pred done, int timeout_ms) {
    return testing::wait_metrics(node.port(), done, timeout_ms);
  }

  hearth::testing::RedisServer redis_;
  fs::path dir_;
};

// Issue #24's acceptance: "Redis killed mid-traffic (no client error, counted,
// recovers)".
TEST_F(RemoteTierHttp, RedisKilledMidTrafficNoClientErrorCountedAndRecovers) {
  // Another node leaves two rows in Redis that the traffic node does not hold
  // locally: prompts whose continuations the traffic node must pull from Redis,
  // once while Redis is up (a remote hit) and once while it is down.
  const std::string seed[2] = {kPrompt + " The sun was hot.", kPrompt + " The wind was cold."};
  {
    auto seeder = start_node("seeder");
    ASSERT_TRUE(seeder);
    for (const auto& p : seed) ASSERT_EQ(complete(seeder->port(), p, 1).status, 200);
    ASSERT_EQ(seeder->stop(), 0) << seeder->log();
  }
  auto node = start_node("node1");
  ASSERT_TRUE(node);
  std::string m = wait_for(
      *node, [](const std::string& t) { return sample(t, kLearned) >= 2; }, 10000);
  ASSERT_GE(sample(m, kLearned), 2) << "node1 never read the row index";
  // Clients send completions without pause, each prompt new (so each is a cold
  // save, published to Redis), until told to stop.
  constexpr int kClients = 3;
  std::atomic<bool> stop{false};
  std::atomic<int> done{0};
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; !stop.load(); ++i) {
        const std::string prompt =
            kPrompt + " number " + std::to_string(t) + " of " + std::to_string(i) + ".";
        const Reply r = complete(node->port(), prompt, 4);
        if (r.status != 200 || !r.body.contains("choices")) {
          std::lock_guard lock(mu);
          failures.push_back(std::to_string(r.status) + " " + r.body.dump());
        }
        done.fetch_add(1);
      }
    });
  }
  auto stop_clients = [&] {
    stop = true;
    for (auto& c : clients) c.join();
    clients.clear();
  };
  struct Guard {
    std::function<void()> f;
    ~Guard() { f(); }
  } guard{[&] {
    if (!clients.empty()) stop_clients();
  }};

  // Traffic reaches Redis, and a row is pulled from it.
  const Reply warm = complete(node->port(), seed[0] + " Then", 4);
  ASSERT_EQ(warm.status, 200) << warm.body.dump();
  EXPECT_NE(warm.body["usage"]["hearth"]["cache_hit"], "cold") << warm.body.dump();
  m = wait_for(
      *node, [](const std::string& t) { return sample(t, kWon) >= 2; }, 15000);
  ASSERT_GE(sample(m, kWon), 2) << "no row was published to Redis:\n" << node->log();
  const double hits_up = sample(m, kHits);
  EXPECT_GE(hits_up, 1) << "the seeded row was pulled from Redis";
  const double errors_before = sample(m, kErrors);

  // Redis dies (SIGKILL: no goodbye on the connections) while the clients go on, and
  // stays down until the tier has failed again after a backoff and skipped calls
  // while degraded.
  redis_.kill();
  const int done_at_kill = done.load();
  const double skipped_before = sample(m, kSkipped);
  m = wait_for(
      *node,
      [&](const std::string& t) {
        return sample(t, kErrors) >= errors_before + 2 && sample(t, kSkipped) > skipped_before &&
               done.load() >= done_at_kill + 3 * kClients;
      },
      10000);
  EXPECT_GE(sample(m, kErrors), errors_before + 2) << "the failures are counted, retries too";
  EXPECT_GT(sample(m, kSkipped), skipped_before) << "calls skipped at once while degraded";
  EXPECT_GE(done.load(), done_at_kill + 3 * kClients) << "requests went on while Redis was down";
  // A prompt whose row only Redis holds: the lookup fails over to the local tiers
  // and prefill, and the answer is a cold run's.
  const Reply down = complete(node->port(), seed[1] + " Then", 4, {{"logprobs", 1}});
  ASSERT_EQ(down.status, 200) << down.body.dump();
  const Reply cold =
      complete(node->port(), seed[1] + " Then", 4, {{"logprobs", 1}, {"cache_prompt", false}});
  ASSERT_EQ(cold.status, 200) << cold.body.dump();
  EXPECT_EQ(down.body["choices"][0]["text"], cold.body["choices"][0]["text"]);
  EXPECT_EQ(down.body["choices"][0]["logprobs"], cold.body["choices"][0]["logprobs"]);
  EXPECT_EQ(sample(get_metrics(node->port()), kHits), hits_up) << "nothing came from Redis";
  const double won_while_down = sample(m, kWon);
  EXPECT_EQ(sample(m, kRecoveries), 0) << "no recovery while Redis is down";

  // Redis comes back on the same port, empty: the tier recovers by itself and rows
  // are published again.
  ASSERT_TRUE(redis_.restart()) << redis_.why();
  m = wait_for(
      *node,
      [&](const std::string& t) {
        return sample(t, kRecoveries) >= 1 && sample(t, kWon) >= won_while_down + 2;
      },
      10000);
  stop_clients();
  EXPECT_GE(sample(m, kRecoveries), 1) << "the tier left the degraded state";
  EXPECT_GE(sample(m, kWon), won_while_down + 2) << "rows are published to Redis again";

  // No client saw anything of it.
  EXPECT_TRUE(failures.empty()) << failures.size()
                                << " failed requests, the first: " << failures.front();
  EXPECT_GT(done.load(), done_at_kill);

  // Another cache instance reads what the node published after the restart (the
  // restarted Redis started empty): the rows verify (CRC32C, key replay).
  cache::RemoteTierConfig rc;
  rc.url = redis_.url();
  auto other = cache::RemoteTier::open(rc);
  ASSERT_TRUE(other.ok()) << other.status().message();
  auto rows = (*other)->scan_index();
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_FALSE(rows->empty());
  for (const auto& row : *rows) {
    auto bytes = (*other)->fetch(row.key);
    ASSERT_TRUE(bytes.has_value());
    EXPECT_EQ(bytes->size(), row.size);
  }
  EXPECT_EQ((*other)->counters().hits, rows->size());
  EXPECT_EQ(node->stop(), 0) << node->log();
}

// Issue #24's acceptance: "a corrupt remote row (a miss, never wrong output)".
TEST_F(RemoteTierHttp, CorruptRemoteRowIsAColdAnswerAndIsDeleted) {
  const json params = {{"logprobs", 2}};
  // Node 1 computes the prompt cold and publishes its rows, then leaves (SIGTERM:
  // its saves are finished first).
  std::map<std::string, std::string> damaged;  // row key -> the damaged row's manifest
  Reply cold;
  {
    auto node1 = start_node("node1");
    ASSERT_TRUE(node1);
    cold = complete(node1->port(), kPrompt, 8, params);
    ASSERT_EQ(cold.status, 200) << cold.body.dump();
    ASSERT_EQ(cold.body["usage"]["hearth"]["cache_hit"], "cold") << cold.body.dump();
    ASSERT_EQ(node1->stop(), 0) << node1->log();
  }
  // Every row in Redis loses a bit of its last (payload) chunk.
  auto raw = cache::RedisClient::connect(*cache::parse_redis_url(redis_.url()), 1000);
  ASSERT_TRUE(raw.ok());
  auto rows = (*raw)->command({"KEYS", "hearth:row:*"});
  ASSERT_TRUE(rows.ok());
  ASSERT_FALSE(rows->elements.empty()) << "node1 published nothing";
  for (const auto& row : rows->elements) {
    auto manifest = (*raw)->command({"GET", row.str});
    ASSERT_TRUE(manifest.ok());
    // "KVR1 <nonce> <n_chunks> <bytes>"; chunk i is hearth:chunk:<hex>:<nonce>:<i>.
    std::istringstream in(manifest->str);
    std::string magic, nonce;
    uint64_t n = 0;
    in >> magic >> nonce >> n;
    ASSERT_EQ(magic, "KVR1");
    ASSERT_GT(n, 0u);
    const std::string hex = row.str.substr(std::string("hearth:row:").size());
    const std::string last = std::string("hearth:chunk:")
                                 .append(hex)
                                 .append(":")
                                 .append(nonce)
                                 .append(":")
                                 .append(std::to_string(n - 1));
    auto chunk = (*raw)->command({"GET", last});
    ASSERT_TRUE(chunk.ok());
    ASSERT_FALSE(chunk->is_nil()) << last;
    std::string bytes = chunk->str;
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
    ASSERT_TRUE((*raw)->command({"SET", last, bytes}).ok());
    damaged[row.str] = manifest->str;
  }

  // Node 2 learns of the rows from the shared index, pulls the longest match for the
  // same prompt, finds it corrupt: a miss, so its answer is computed cold and equals
  // node 1's bit for bit (text and logprobs).
  auto node2 = start_node("node2");
  ASSERT_TRUE(node2);
  std::string m = wait_for(
      *node2,
      [&](const std::string& t) {
        return sample(t, kLearned) >= static_cast<double>(damaged.size());
      },
      10000);
  ASSERT_GE(sample(m, kLearned), static_cast<double>(damaged.size()))
      << "node2 never read the row index";
  const Reply again = complete(node2->port(), kPrompt, 8, params);
  ASSERT_EQ(again.status, 200) << again.body.dump();
  EXPECT_EQ(again.body["usage"]["hearth"]["cache_hit"], "cold") << again.body.dump();
  EXPECT_EQ(again.body["choices"][0]["text"], cold.body["choices"][0]["text"]);
  EXPECT_EQ(again.body["choices"][0]["logprobs"], cold.body["choices"][0]["logprobs"])
      << "a corrupt remote row must never change the output";

  m = get_metrics(node2->port());
  EXPECT_GE(sample(m, kCorrupt), 1) << "the corrupt row was fetched and counted";
  EXPECT_EQ(sample(m, kDeleted), sample(m, kCorrupt)) << "each corrupt row is deleted";
  EXPECT_EQ(sample(m, kHits), 0) << "no damaged row was served";
  // The damaged rows that were fetched are gone from Redis: their manifests no longer
  // stand (node 2 may since have published a good row under the same key).
  size_t gone = 0;
  for (const auto& [row, manifest] : damaged) {
    auto now = (*raw)->command({"GET", row});
    ASSERT_TRUE(now.ok());
    if (now->is_nil() || now->str != manifest) ++gone;
  }
  EXPECT_GE(gone, 1u);
  EXPECT_EQ(static_cast<double>(gone), sample(m, kDeleted));
  EXPECT_EQ(node2->stop(), 0) << node2->log();
}

}  // namespace
}  // namespace hearth::server
