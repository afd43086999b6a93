// Two Cache instances ("nodes") sharing one redis-server through the remote tier:
// a row saved on node A is served bit-identical on node B, exactly and by prefix
// (the cross-node index), and Redis dying never fails a local save or lookup.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "cache/test_util.h"
#include "testing/redis_server.h"

namespace hearth::cache {
namespace {

using testing::make_meta;
using testing::seq_tokens;
using testing::test_ns;

std::unique_ptr<Cache> open_node(const std::string& url) {
  CacheConfig cfg;
  cfg.ram_quota_bytes = 64ull << 20;
  cfg.sweep_interval_ms = 0;
  cfg.remote.url = url;
  cfg.remote.chunk_bytes = 8192;
  cfg.remote.timeout_ms = 300;
  cfg.remote.backoff_max_ms = 200;
  cfg.remote.index_poll_ms = 20;
  auto c = Cache::open(cfg);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? std::move(*c) : nullptr;
}

std::vector<uint8_t> payload_of(size_t n, uint8_t seed) {
  std::vector<uint8_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(seed ^ (i * 131));
  return p;
}

uint64_t counter(const Cache& c, const std::string& name) {
  for (const auto& [k, v] : c.counters_snapshot())
    if (k == name) return v;
  return 0;
}

TEST(RemoteCache, RowSavedOnNodeAIsServedBitIdenticalOnNodeB) {
  hearth::testing::RedisServer redis;
  if (!redis.available()) GTEST_SKIP() << redis.why();
  auto a = open_node(redis.url());
  auto b = open_node(redis.url());
  ASSERT_TRUE(a && b);
  auto meta = make_meta(seq_tokens(300));
  auto payload = payload_of(100000, 9);
  auto key = a->save(Tier::kRam, meta, payload);
  ASSERT_TRUE(key.ok()) << key.status().message();
  EXPECT_EQ(counter(*a, "remote_publishes"), 1u);
  auto hit = b->lookup_exact(*key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->tier, Tier::kRam);  // pulled into B's ram tier
  KvcInfo info;
  auto got = b->load(*key, &info);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, payload);
  EXPECT_EQ(info.tokens, meta.tokens);
  EXPECT_EQ(counter(*b, "remote_hits"), 1u);
  EXPECT_EQ(counter(*b, "remote_publishes"), 0u);  // a pulled row is not published back
}

TEST(RemoteCache, PrefixLookupHitsARowPublishedByAnotherNode) {
  hearth::testing::RedisServer redis;
  if (!redis.available()) GTEST_SKIP() << redis.why();
  auto a = open_node(redis.url());
  auto b = open_node(redis.url());
  ASSERT_TRUE(a && b);
  auto meta = make_meta(seq_tokens(200, 7));
  auto payload = payload_of(30000, 4);
  ASSERT_TRUE(a->save(Tier::kRam, meta, payload).ok());
  // B's prompt continues A's row: a longer conversation.
  auto prompt = meta.tokens;
  for (Token t = 9000; t < 9050; ++t) prompt.push_back(t);
  std::optional<PrefixHit> hit;
  for (int i = 0; i < 100 && !hit; ++i) {  // the index follower polls every 20 ms
    hit = b->lookup_radix(meta.ns, prompt);
    if (!hit) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->n_tokens, meta.tokens.size());
  auto got = b->load(hit->row.key);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, payload);
  // Another namespace never sees it.
  EXPECT_FALSE(b->lookup_radix(test_ns(0x33), prompt).has_value());
}

TEST(RemoteCache, RedisKilledMidTrafficNeverFailsLocalWorkAndRecovers) {
  hearth::testing::RedisServer redis;
  if (!redis.available()) GTEST_SKIP() << redis.why();
  auto a = open_node(redis.url());
  ASSERT_TRUE(a);
  redis.kill();
  for (int i = 0; i < 10; ++i) {
    auto meta = make_meta(seq_tokens(20, 1000 + i * 100));
    auto payload = payload_of(5000, static_cast<uint8_t>(i));
    auto key = a->save(Tier::kRam, meta, payload);
    ASSERT_TRUE(key.ok()) << key.status().message();  // the local save stands
    auto got = a->load(*key);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, payload);
    CacheKey absent = *key;
    absent[5] ^= 0xff;
    EXPECT_FALSE(a->lookup_exact(absent).has_value());  // a miss, not an error
  }
  EXPECT_GE(counter(*a, "remote_errors"), 1u);
  ASSERT_TRUE(redis.restart());
  bool published = false;
  for (int i = 0; i < 100 && !published; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    auto meta = make_meta(seq_tokens(20, 50000 + i * 100));
    ASSERT_TRUE(a->save(Tier::kRam, meta, payload_of(5000, 1)).ok());
    published = counter(*a, "remote_publishes") > 0;
  }
  EXPECT_TRUE(published);
  EXPECT_GE(counter(*a, "remote_recoveries"), 1u);
}

}  // namespace
}  // namespace hearth::cache
