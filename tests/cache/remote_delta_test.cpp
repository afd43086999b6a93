// Delta rows in the Redis tier: a continuation is stored in Redis as a delta (its own
// KVC bytes, the parent's key in its header) while its parent is there; another node
// restores it by walking the chain, bit-identical; a chain with a link gone or bad is
// a counted miss, never a partial row.
#include <gtest/gtest.h>

#include <algorithm>

#include "cache/delta_util.h"
#include "cache/redis_client.h"
#include "cache/test_util.h"
#include "testing/redis_server.h"

namespace hearth::cache {
namespace {

using testing::layout_meta;
using testing::layout_payload;
using testing::seq_tokens;

std::unique_ptr<Cache> open_node(const std::string& url, uint32_t max_delta_depth,
                                 uint32_t ttl_s = 0) {
  CacheConfig cfg;
  cfg.ram_quota_bytes = 64ull << 20;
  cfg.sweep_interval_ms = 0;
  cfg.max_delta_depth = max_delta_depth;
  cfg.remote.url = url;
  cfg.remote.chunk_bytes = 4096;
  cfg.remote.timeout_ms = 500;
  cfg.remote.backoff_max_ms = 200;
  cfg.remote.index_poll_ms = 20;
  cfg.remote.ttl_s = ttl_s;
  auto c = Cache::open(cfg);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? std::move(*c) : nullptr;
}

uint64_t counter(const Cache& c, const std::string& name) {
  for (const auto& [k, v] : c.counters_snapshot())
    if (k == name) return v;
  return 0;
}

std::unique_ptr<RedisClient> raw_client(const hearth::testing::RedisServer& redis) {
  auto c = RedisClient::connect(*parse_redis_url(redis.url()), 2000);
  EXPECT_TRUE(c.ok());
  return c.ok() ? std::move(*c) : nullptr;
}

// The row bytes Redis holds: the sum of the chunk keys' lengths.
uint64_t redis_row_bytes(RedisClient& c) {
  auto keys = c.command({"KEYS", "hearth:chunk:*"});
  EXPECT_TRUE(keys.ok());
  uint64_t total = 0;
  for (const auto& k : keys->elements) {
    auto n = c.command({"STRLEN", k.str});
    EXPECT_TRUE(n.ok());
    total += static_cast<uint64_t>(n->integer);
  }
  return total;
}

// A chat replayed turn by turn: each turn's prompt continues the last (`turns` turns
// of `step` tokens); every turn's prefix is saved, as the runtime saves a turn.
std::vector<std::vector<Token>> conversation(size_t turns, size_t step = 24) {
  const auto all = seq_tokens(turns * step, 100);
  std::vector<std::vector<Token>> out;
  for (size_t t = 1; t <= turns; ++t)
    out.emplace_back(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(t * step));
  return out;
}

std::vector<CacheKey> replay(Cache& c, const std::vector<std::vector<Token>>& turns) {
  std::vector<CacheKey> keys;
  for (const auto& t : turns) {
    auto k = c.save(Tier::kRam, layout_meta(t), layout_payload(t));
    EXPECT_TRUE(k.ok()) << k.status().to_string();
    if (k.ok()) keys.push_back(*k);
  }
  return keys;
}

// The chunk keys of one row.
std::vector<std::string> chunks_of(RedisClient& c, const CacheKey& key) {
  auto keys = c.command({"KEYS", "hearth:chunk:" + to_hex(key) + ":*"});
  EXPECT_TRUE(keys.ok());
  std::vector<std::string> out;
  for (const auto& k : keys->elements) out.push_back(k.str);
  // By chunk index: the same prefix, so a shorter name is a lower index.
  std::sort(out.begin(), out.end(), [](const std::string& x, const std::string& y) {
    return x.size() != y.size() ? x.size() < y.size() : x < y;
  });
  return out;
}

TEST(RemoteDelta, TwentyTurnReplayStoresThreeTimesFewerBytesAndRestoresOnNodeB) {
  hearth::testing::RedisServer redis;
  if (!redis.available()) GTEST_SKIP() << redis.why();
  auto raw = raw_client(redis);
  ASSERT_TRUE(raw);
  const auto turns = conversation(20);
  const std::vector<uint8_t> cold = layout_payload(turns.back());  // a cold run's KV

  // Deltas off: every turn is a whole row in Redis.
  uint64_t whole_bytes = 0;
  {
    auto a = open_node(redis.url(), 0);
    ASSERT_TRUE(a);
    replay(*a, turns);
    EXPECT_EQ(counter(*a, "remote_publishes"), 20u);
    EXPECT_EQ(counter(*a, "remote_delta_publishes"), 0u);
    whole_bytes = redis_row_bytes(*raw);
  }
  ASSERT_TRUE(raw->command({"FLUSHALL"}).ok());

  // Deltas on.
  auto a = open_node(redis.url(), 32);
  ASSERT_TRUE(a);
  const auto keys = replay(*a, turns);
  ASSERT_EQ(keys.size(), 20u);
  EXPECT_EQ(counter(*a, "remote_publishes"), 20u);
  EXPECT_EQ(counter(*a, "remote_delta_publishes"), 19u);
  const uint64_t delta_bytes = redis_row_bytes(*raw);
  EXPECT_EQ(counter(*a, "remote_bytes_stored"), delta_bytes);
  ASSERT_GT(delta_bytes, 0u);
  EXPECT_GE(double(whole_bytes) / double(delta_bytes), 3.0)
      << whole_bytes << " bytes whole vs " << delta_bytes << " as deltas";

  // Node B: turn 20 walks the 20-row chain out of Redis, bit-identical to A and cold.
  auto b = open_node(redis.url(), 32);
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->lookup_exact(keys.back()).has_value());
  EXPECT_EQ(counter(*b, "remote_hits"), 20u);
  EXPECT_EQ(counter(*b, "remote_chain_broken"), 0u);
  auto on_b = b->load(keys.back());
  auto on_a = a->load(keys.back());
  ASSERT_TRUE(on_b.ok() && on_a.ok());
  EXPECT_EQ(*on_b, *on_a);
  EXPECT_EQ(*on_b, cold);
  // A mid-chain turn on a third node (deltas off) too.
  auto c = open_node(redis.url(), 0);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->lookup_exact(keys[9]).has_value());
  auto mid = c->load(keys[9]);
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(*mid, layout_payload(turns[9]));
}

TEST(RemoteDelta, DepthBoundStartsAWholeRowInRedis) {
  hearth::testing::RedisServer redis;
  if (!redis.available()) GTEST_SKIP() << redis.why();
  auto a = open_node(redis.url(), 3);
  ASSERT_TRUE(a);
  const auto turns = conversation(9, 8);
  const auto keys = replay(*a, turns);
  ASSERT_EQ(keys.size(), 9u);
  // Roots at turns 1, 5, 9; every other turn a delta at depth <= 3.
  EXPECT_EQ(counter(*a, "remote_delta_publishes"), 6u);
  auto b = open_node(redis.url(), 3);
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->lookup_exact(keys[7]).has_value());
  EXPECT_EQ(counter(*b, "remote_hits"), 4u);  // turns 8, 7, 6 and the root 5
  auto got = b->load(keys[7]);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, layout_payload(turns[7]));
}

// Redis evicted a parent (here: deleted) while its child stayed: the child is a counted
// miss (never a partial row), deleted from Redis; the cold answer saved then is whole.
TEST(RemoteDelta, ParentGoneFromRedisIsACountedMissAndAColdAnswer) {
  hearth::testing::RedisServer redis;
  if (!redis.available()) GTEST_SKIP() << redis.why();
  auto raw = raw_client(redis);
  ASSERT_TRUE(raw);
  auto a = open_node(redis.url(), 8);
  ASSERT_TRUE(a);
  const auto turns = conversation(3);
  const auto keys = replay(*a, turns);
  ASSERT_EQ(keys.size(), 3u);
  std::vector<std::string> gone = chunks_of(*raw, keys[1]);
  gone.push_back("hearth:row:" + to_hex(keys[1]));
  for (const auto& k : gone) ASSERT_TRUE(raw->command({"DEL", k}).ok());

  auto b = open_node(redis.url(), 8);
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->lookup_exact(keys[2]).has_value());
  EXPECT_EQ(counter(*b, "remote_chain_broken"), 1u);
  EXPECT_FALSE(b->load(keys[2]).ok());
  EXPECT_TRUE(b->dump().empty());  // nothing partial kept
  auto row = raw->command({"EXISTS", "hearth:row:" + to_hex(keys[2])});
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->integer, 0);  // the orphan is gone from Redis too

  // B computes turn 3 cold and saves it: published whole (no parent in Redis), and a
  // third node restores it.
  ASSERT_TRUE(b->save(Tier::kRam, layout_meta(turns[2]), layout_payload(turns[2])).ok());
  EXPECT_EQ(counter(*b, "remote_publishes"), 1u);
  EXPECT_EQ(counter(*b, "remote_delta_publishes"), 0u);
  auto c = open_node(redis.url(), 8);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->lookup_exact(keys[2]).has_value());
  auto got = c->load(keys[2]);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, layout_payload(turns[2]));
}

// A payload byte flipped in one link (the root, a middle link, the child itself): the
// row asked for is a miss, never the bytes; the bad link is deleted from Redis.
TEST(RemoteDelta, CorruptLinkAnywhereInTheChainIsAMiss) {
  hearth::testing::RedisServer redis;
  if (!redis.available()) GTEST_SKIP() << redis.why();
  auto raw = raw_client(redis);
  ASSERT_TRUE(raw);
  const auto turns = conversation(4);
  for (size_t bad = 0; bad < 4; bad += 1) {
    SCOPED_TRACE("corrupt link " + std::to_string(bad));
    ASSERT_TRUE(raw->command({"FLUSHALL"}).ok());
    auto a = open_node(redis.url(), 8);
    ASSERT_TRUE(a);
    const auto keys = replay(*a, turns);
    ASSERT_EQ(keys.size(), 4u);
    const auto chunks = chunks_of(*raw, keys[bad]);
    ASSERT_FALSE(chunks.empty());
    const std::string last = chunks.back();  // payload bytes (a chunk index sorts last)
    auto v = raw->command({"GET", last});
    ASSERT_TRUE(v.ok());
    std::string flipped = v->str;
    flipped.back() = static_cast<char>(flipped.back() ^ 0x10);
    ASSERT_TRUE(raw->command({"SET", last, flipped}).ok());

    auto b = open_node(redis.url(), 8);
    ASSERT_TRUE(b);
    EXPECT_FALSE(b->lookup_exact(keys[3]).has_value());
    EXPECT_EQ(counter(*b, "remote_corrupt"), 1u);
    EXPECT_GE(counter(*b, "remote_corrupt_deleted"), 1u);
    EXPECT_EQ(counter(*b, "remote_chain_broken"), bad == 3 ? 0u : 1u);
    EXPECT_TRUE(b->dump().empty());
    auto exists = raw->command({"EXISTS", "hearth:row:" + to_hex(keys[bad])});
    ASSERT_TRUE(exists.ok());
    EXPECT_EQ(exists->integer, 0);
  }
}

// Publishing a child refreshes its parent's TTL, so a live chain stays together.
TEST(RemoteDelta, PublishingAChildRefreshesItsParentsTtl) {
  hearth::testing::RedisServer redis;
  if (!redis.available()) GTEST_SKIP() << redis.why();
  auto raw = raw_client(redis);
  ASSERT_TRUE(raw);
  auto a = open_node(redis.url(), 8, /*ttl_s=*/1000);
  ASSERT_TRUE(a);
  const auto turns = conversation(2);
  auto k1 = a->save(Tier::kRam, layout_meta(turns[0]), layout_payload(turns[0]));
  ASSERT_TRUE(k1.ok());
  std::vector<std::string> keys = chunks_of(*raw, *k1);
  keys.push_back("hearth:row:" + to_hex(*k1));
  for (const auto& k : keys) ASSERT_TRUE(raw->command({"EXPIRE", k, "5"}).ok());
  ASSERT_TRUE(a->save(Tier::kRam, layout_meta(turns[1]), layout_payload(turns[1])).ok());
  EXPECT_EQ(counter(*a, "remote_delta_publishes"), 1u);
  for (const auto& k : keys) {
    auto ttl = raw->command({"TTL", k});
    ASSERT_TRUE(ttl.ok());
    EXPECT_GT(ttl->integer, 500) << k;
  }
}

}  // namespace
}  // namespace hearth::cache
