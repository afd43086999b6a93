// Scale-out (docs/scale-out.md): a real HAProxy running the repository's own
// deploy/haproxy.cfg (ports rewritten) in front of two real `hearth serve` processes on
// the engine and the shared stories260K.gguf. Each node names itself in X-Hearth-Node
// (--node-id), which is how the tests see where HAProxy sent a request.
//   - the same X-Session-Id always lands on the same node, and the ids spread;
//   - requests without the header spread over both nodes, and go to the one with the
//     fewest open connections;
//   - a node killed: the next request of its session is served by the other node, with
//     no client error (HAProxy retries and redispatches), and the node leaves the pools;
//   - with the Redis tier (after the merge with the redis helper's branch): the second
//     turn of a conversation, forced onto the other node, is warm and bit-identical to
//     a cold run.
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "haproxy_process.h"
#include "hearth/server/server.h"
#include "metrics_probe.h"
#include "serve_fixture.h"
#include "serve_process.h"

#if __has_include("testing/redis_server.h")
#include "cache/redis_client.h"
#include "testing/redis_server.h"
#define HEARTH_SCALE_OUT_HAS_REDIS 1
#endif

namespace hearth::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::HaproxyProcess;
using testing::ServeProcess;

// deploy/haproxy.cfg's own ports: the balancer, the stats page, the nodes.
constexpr int kFrontPort = 8080;
constexpr int kStatsPort = 8404;
constexpr int kNodePorts[] = {8081, 8082};
const char* const kNodeNames[] = {"node1", "node2"};  // the cfg's server names

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Reply {
  int status = 0;
  std::string node;  // X-Hearth-Node
  json body;
};

// POST /v1/completions, greedy; `session` (when not empty) as X-Session-Id.
Reply complete(int port, const std::string& prompt, int max_tokens, const std::string& session,
               json extra = json::object()) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(120, 0);
  json body = {
      {"model", "stories"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
  body.update(extra);
  httplib::Headers headers;
  if (!session.empty()) headers.emplace("X-Session-Id", session);
  auto r = c.Post("/v1/completions", headers, body.dump(), "application/json");
  Reply out;
  if (!r) return out;
  out.status = r->status;
  out.node = r->get_header_value("X-Hearth-Node");
  out.body = json::parse(r->body, nullptr, false);
  return out;
}

class ScaleOut : public ::testing::Test {
 protected:
  void SetUp() override {
    haproxy_ = testing::haproxy_path();
    if (haproxy_.empty()) GTEST_SKIP() << "haproxy is not installed (scripts/install-deps.sh)";
    dir_ = testing::scratch_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override {
    lb_.stop();
    for (auto& n : nodes_)
      if (n) n->stop();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Starts node i (0 or 1) named kNodeNames[i]; `extra` are more flags.
  void start_node(size_t i, const std::vector<std::string>& extra = {}) {
    const fs::path model = fs::path(HEARTH_SHARED_DIR) / "models" / "stories260K.gguf";
    ASSERT_TRUE(fs::exists(model)) << model;
    const fs::path d = dir_ / kNodeNames[i];
    fs::create_directories(d);
    std::vector<std::string> args = {
        "--config", testing::write_config(d, "id = \"stories\"\npath = \"" + model.string() + "\""),
        "--node-id", kNodeNames[i], "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    nodes_[i] = std::make_unique<ServeProcess>();
    ASSERT_TRUE(nodes_[i]->start(args, 60000)) << nodes_[i]->log();
  }

  // Runs deploy/haproxy.cfg in front of the started nodes and waits until it holds
  // both UP.
  void start_balancer() {
    front_ = testing::free_port();
    const int stats = testing::free_port();
    std::map<int, int> ports = {{kFrontPort, front_}, {kStatsPort, stats}};
    for (size_t i = 0; i < 2; ++i) ports[kNodePorts[i]] = nodes_[i]->port();
    const std::string cfg = testing::rewrite_haproxy_ports(
        read_text(fs::path(HEARTH_SOURCE_DIR) / "deploy" / "haproxy.cfg"), ports);
    ASSERT_TRUE(lb_.start(haproxy_, dir_, cfg, stats)) << lb_.log();
    ASSERT_TRUE(HaproxyProcess::wait_for(
        [&] {
          return lb_.server_status("hearth_sessions", "node1") == "UP" &&
                 lb_.server_status("hearth_sessions", "node2") == "UP";
        },
        30000))
        << lb_.stats_csv() << lb_.log();
  }

  // The index of the node named `name` (-1: neither).
  static int node_index(const std::string& name) {
    for (int i = 0; i < 2; ++i)
      if (name == kNodeNames[i]) return i;
    return -1;
  }

  std::string haproxy_;
  fs::path dir_;
  std::unique_ptr<ServeProcess> nodes_[2];
  HaproxyProcess lb_;
  int front_ = 0;
};

const std::string kPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park with her friends. One day, she saw a big red ball";

// Without --node-id a node names itself HOSTNAME:PORT, on every reply (errors and
// /health included) and in /health's body.
TEST(ScaleOutNode, NodeIdDefaultsToHostnameAndPort) {
  const fs::path dir = testing::scratch_dir("node-id-default");
  const fs::path model = fs::path(HEARTH_SHARED_DIR) / "models" / "stories260K.gguf";
  ServeProcess node;
  ASSERT_TRUE(node.start(
      {"--config",
       testing::write_config(dir, "id = \"stories\"\npath = \"" + model.string() + "\""), "-q"},
      60000))
      << node.log();
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  const std::string expected = std::string(host) + ":" + std::to_string(node.port());
  httplib::Client c("127.0.0.1", node.port());
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->get_header_value("X-Hearth-Node"), expected);
  EXPECT_EQ(json::parse(health->body).value("node", ""), expected);
  auto missing = c.Get("/no-such-route");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->get_header_value("X-Hearth-Node"), expected);
  const Reply r = complete(node.port(), kPrompt, 1, "");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.node, expected);
  node.stop();
  fs::remove_all(dir);
}

// deploy/node.toml is a valid configuration as shipped (its model path aside, which
// is the operator's).
TEST(ScaleOutNode, ShippedNodeConfigParses) {
  ServerConfig config;
  const Status s =
      apply_config_file((fs::path(HEARTH_SOURCE_DIR) / "deploy" / "node.toml").string(), config);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(validate_config(config).ok());
  EXPECT_EQ(config.node_id, "node1");
  EXPECT_EQ(config.port, kNodePorts[0]) << "deploy/haproxy.cfg's node1";
}

TEST_F(ScaleOut, ShippedConfigIsValid) {
  std::string out;
  const int rc = testing::run_shell(
      haproxy_ + " -c -f " + (fs::path(HEARTH_SOURCE_DIR) / "deploy" / "haproxy.cfg").string(),
      &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("WARNING"), std::string::npos) << out;
}

TEST_F(ScaleOut, SameSessionAlwaysLandsOnTheSameNode) {
  ASSERT_NO_FATAL_FAILURE(start_node(0));
  ASSERT_NO_FATAL_FAILURE(start_node(1));
  ASSERT_NO_FATAL_FAILURE(start_balancer());
  std::map<std::string, std::string> node_of;  // session -> node
  std::set<std::string> nodes_seen;
  for (int round = 0; round < 2; ++round) {
    for (int s = 0; s < 7; ++s) {  // odd: a rotation would give each id the other node
      const std::string session = "conv-" + std::to_string(s);
      const Reply r = complete(front_, kPrompt, 1, session);
      ASSERT_EQ(r.status, 200) << session << ": " << r.body.dump();
      ASSERT_GE(node_index(r.node), 0) << "X-Hearth-Node '" << r.node << "'";
      EXPECT_EQ(r.body.value("session_id", ""), session);
      if (round == 0) {
        node_of[session] = r.node;
      } else {
        EXPECT_EQ(r.node, node_of[session]) << session << " moved without a node going down";
      }
      nodes_seen.insert(r.node);
    }
  }
  // HAProxy's hash of these fixed ids is deterministic: both nodes hold some.
  EXPECT_EQ(nodes_seen.size(), 2u) << "7 sessions all hashed to " << *nodes_seen.begin();
}

TEST_F(ScaleOut, RequestsWithoutASessionSpreadOverTheNodes) {
  ASSERT_NO_FATAL_FAILURE(start_node(0));
  ASSERT_NO_FATAL_FAILURE(start_node(1));
  ASSERT_NO_FATAL_FAILURE(start_balancer());
  std::map<std::string, int> count;
  for (int i = 0; i < 6; ++i) {
    const Reply r = complete(front_, kPrompt, 1, "");
    ASSERT_EQ(r.status, 200) << r.body.dump();
    EXPECT_FALSE(r.body.contains("session_id")) << "no session was asked for";
    ++count[r.node];
  }
  ASSERT_EQ(count.size(), 2u) << "least connections sent all 6 to " << count.begin()->first;
  for (const auto& [node, n] : count) {
    EXPECT_GE(node_index(node), 0) << node;
    EXPECT_GE(n, 2) << node << " got " << n << " of 6 idle-time requests";
  }
}

// Least connections, not a rotation: while one node holds an open request (its body
// still coming), every request without a session goes to the other node.
TEST_F(ScaleOut, RequestsWithoutASessionGoToTheLeastBusyNode) {
  ASSERT_NO_FATAL_FAILURE(start_node(0));
  ASSERT_NO_FATAL_FAILURE(start_node(1));
  ASSERT_NO_FATAL_FAILURE(start_balancer());
  const std::string body =
      json({{"model", "stories"}, {"prompt", kPrompt}, {"max_tokens", 1}, {"temperature", 0}})
          .dump();
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(front_));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string head = std::string("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                               .append("Content-Type: application/json\r\nContent-Length: ")
                               .append(std::to_string(body.size()))
                               .append("\r\nConnection: close\r\n\r\n")
                               .append(body.substr(0, body.size() / 2));
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  // HAProxy picked a node and connected to it: one connection open in the pool.
  auto open_on = [&](int i) {
    return std::atoi(lb_.server_field("hearth_leastconn", kNodeNames[i], "scur").c_str());
  };
  ASSERT_TRUE(HaproxyProcess::wait_for([&] { return open_on(0) + open_on(1) == 1; }, 10000))
      << lb_.stats_csv();
  const int busy = open_on(0) == 1 ? 0 : 1;
  for (int i = 0; i < 4; ++i) {
    // The previous request's stream may still be closing in HAProxy after its client
    // has the reply (a loaded CI machine showed it): then both nodes count one and the
    // tie may go either way. Least connections is asked of a 1 : 0 pool.
    ASSERT_TRUE(HaproxyProcess::wait_for([&] { return open_on(1 - busy) == 0; }, 10000))
        << lb_.stats_csv();
    ASSERT_EQ(open_on(busy), 1) << lb_.stats_csv();
    const Reply r = complete(front_, kPrompt, 1, "");
    ASSERT_EQ(r.status, 200) << r.body.dump();
    EXPECT_EQ(r.node, kNodeNames[1 - busy])
        << "request " << i << " while " << kNodeNames[busy] << " holds a connection";
  }
  // The held request completes on the node that held it.
  const std::string rest = body.substr(body.size() / 2);
  ASSERT_EQ(::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL), static_cast<ssize_t>(rest.size()));
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;)
    reply.append(buf, static_cast<size_t>(n));
  ::close(fd);
  EXPECT_EQ(testing::raw_status(reply), 200) << reply;
  // HAProxy sends header names in lower case (HTTP/2 style); the value is hearth's.
  EXPECT_NE(reply.find(std::string("x-hearth-node: ").append(kNodeNames[busy])), std::string::npos)
      << reply;
}

TEST_F(ScaleOut, NodeDownItsSessionsMoveWithNoClientError) {
  ASSERT_NO_FATAL_FAILURE(start_node(0));
  ASSERT_NO_FATAL_FAILURE(start_node(1));
  ASSERT_NO_FATAL_FAILURE(start_balancer());
  const std::string session = "conv-down";
  const Reply first = complete(front_, kPrompt, 2, session);
  ASSERT_EQ(first.status, 200) << first.body.dump();
  const int home = node_index(first.node);
  ASSERT_GE(home, 0) << first.node;
  const int other = 1 - home;

  // SIGKILL: no drain, no 503 from /health first; HAProxy learns of it from the refused
  // connection of the very next request (or a failed check), retries and redispatches.
  nodes_[home]->signal(SIGKILL);
  ASSERT_GE(nodes_[home]->wait(10000), 0);
  for (int i = 0; i < 3; ++i) {
    const Reply r = complete(front_, kPrompt, 2, session);
    ASSERT_EQ(r.status, 200) << "request " << i << " after the kill: " << r.body.dump() << "\n"
                             << lb_.log();
    EXPECT_EQ(r.node, kNodeNames[other]) << "request " << i;
    EXPECT_EQ(r.body["choices"][0]["text"], first.body["choices"][0]["text"])
        << "the same greedy reply from the other node";
  }
  const Reply no_session = complete(front_, kPrompt, 1, "");
  EXPECT_EQ(no_session.status, 200);
  EXPECT_EQ(no_session.node, kNodeNames[other]);
  EXPECT_TRUE(HaproxyProcess::wait_for(
      [&] { return lb_.server_status("hearth_sessions", kNodeNames[home]).rfind("DOWN", 0) == 0; },
      10000))
      << lb_.stats_csv();
  EXPECT_EQ(lb_.server_status("hearth_leastconn", kNodeNames[home]).rfind("DOWN", 0), 0u)
      << "the leastconn pool tracks the same health";
}

#ifdef HEARTH_SCALE_OUT_HAS_REDIS
// The headline: turn 1 on one node, turn 2 of the same conversation on the other (its
// first node stopped, so HAProxy rehashes the session) is served warm from the shared
// Redis tier, and is bit-identical (text and logprobs) to a cold run of turn 2.
TEST_F(ScaleOut, SecondTurnOnOtherNodeIsWarm) {
  hearth::testing::RedisServer redis;  // a redis-server on a free port, temp dir
  ASSERT_FALSE(redis.url().empty());
  ASSERT_NO_FATAL_FAILURE(start_node(0, {"--redis", redis.url()}));
  ASSERT_NO_FATAL_FAILURE(start_node(1, {"--redis", redis.url()}));
  ASSERT_NO_FATAL_FAILURE(start_balancer());
  const std::string session = "conv-warm";
  const json logprobs = {{"logprobs", 2}};
  const Reply turn1 = complete(front_, kPrompt, 8, session, logprobs);
  ASSERT_EQ(turn1.status, 200) << turn1.body.dump();
  const int home = node_index(turn1.node);
  ASSERT_GE(home, 0) << turn1.node;
  const int other = 1 - home;
  const std::string turn2_prompt =
      kPrompt + turn1.body["choices"][0]["text"].get<std::string>() + " The next day, Lily";

  // SIGTERM: the node finishes its saves (turn 1's row reaches Redis) and leaves.
  ASSERT_EQ(nodes_[home]->stop(), 0) << nodes_[home]->log();
  // The other node learns of the row by following the Redis row index every
  // index_poll_ms (200 ms by default): a row is visible elsewhere within a few polls of
  // its publish, not at once (docs/scale-out.md). Both nodes started on an empty
  // Redis, so the other node has caught up once it has read every stream entry.
  auto raw = cache::RedisClient::connect(*cache::parse_redis_url(redis.url()), 1000);
  ASSERT_TRUE(raw.ok()) << raw.status().message();
  auto published = (*raw)->command({"XLEN", "hearth:index"});
  ASSERT_TRUE(published.ok()) << published.status().message();
  ASSERT_GT(published->integer, 0) << "turn 1 published no row";
  const std::string learned = testing::wait_metrics(
      nodes_[other]->port(),
      [&](const std::string& t) {
        return testing::metric(t, "hearth_cache_remote_index_entries_total") >=
               static_cast<double>(published->integer);
      },
      10000);
  ASSERT_GE(testing::metric(learned, "hearth_cache_remote_index_entries_total"),
            static_cast<double>(published->integer));
  const Reply turn2 = complete(front_, turn2_prompt, 8, session, logprobs);
  ASSERT_EQ(turn2.status, 200) << turn2.body.dump() << "\n" << lb_.log();
  EXPECT_EQ(turn2.node, kNodeNames[other]);
  EXPECT_GT(turn2.body["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0)
      << turn2.body.dump();
  EXPECT_NE(turn2.body["usage"]["hearth"]["cache_hit"], "cold") << turn2.body.dump();

  // Cold: the same prompt on the same node, the cache not used.
  const Reply cold = complete(nodes_[other]->port(), turn2_prompt, 8, "",
                              {{"logprobs", 2}, {"cache_prompt", false}});
  ASSERT_EQ(cold.status, 200) << cold.body.dump();
  EXPECT_EQ(cold.body["usage"]["hearth"]["cache_hit"], "cold") << cold.body.dump();
  EXPECT_EQ(turn2.body["choices"][0]["text"], cold.body["choices"][0]["text"]);
  EXPECT_EQ(turn2.body["choices"][0]["logprobs"], cold.body["choices"][0]["logprobs"])
      << "a warm restore from Redis must be bit-identical to a cold prefill";
}
#endif

}  // namespace
}  // namespace hearth::server
