// Two Cache instances ("nodes") sharing one redis-server through the remote tier:
// a row saved on node A is served bit-identical on node B, exactly and by prefix
// (the cross-node index), and Redis dying never fails a local save or lookup.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "cache/redis_client.h"
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

// A row damaged in Redis (a payload byte flipped) reached through node B's prefix
// lookup: a miss, never the bytes; deleted from Redis and forgotten by B's index, so
// B does not fetch it again; B's own save of the prompt then publishes a good row.
TEST(RemoteCache, CorruptRemoteRowIsAMissDeletedAndNotFetchedAgain) {
  hearth::testing::RedisServer redis;
  if (!redis.available()) GTEST_SKIP() << redis.why();
  auto a = open_node(redis.url());
  auto b = open_node(redis.url());
  ASSERT_TRUE(a && b);
  auto meta = make_meta(seq_tokens(200, 7));
  ASSERT_TRUE(a->save(Tier::kRam, meta, payload_of(30000, 4)).ok());
  auto raw = RedisClient::connect(*parse_redis_url(redis.url()), 1000);
  ASSERT_TRUE(raw.ok());
  auto chunks = (*raw)->command({"KEYS", "hearth:chunk:*:2"});  // a payload chunk
  ASSERT_TRUE(chunks.ok());
  ASSERT_EQ(chunks->elements.size(), 1u);
  const std::string chunk_key = chunks->elements[0].str;
  auto chunk = (*raw)->command({"GET", chunk_key});
  ASSERT_TRUE(chunk.ok());
  std::string flipped = chunk->str;
  flipped[77] = static_cast<char>(flipped[77] ^ 0x01);
  ASSERT_TRUE((*raw)->command({"SET", chunk_key, flipped}).ok());

  auto prompt = meta.tokens;
  prompt.push_back(9000);
  // B learns of the row from the index (polled every 20 ms), then pulls it: corrupt.
  for (int i = 0; i < 100 && counter(*b, "remote_corrupt") == 0; ++i) {
    EXPECT_FALSE(b->lookup_radix(meta.ns, prompt).has_value());
    if (counter(*b, "remote_corrupt") == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(counter(*b, "remote_corrupt"), 1u);
  EXPECT_EQ(counter(*b, "remote_corrupt_deleted"), 1u);
  EXPECT_EQ(counter(*b, "remote_hits"), 0u);
  auto left = (*raw)->command({"KEYS", "hearth:*"});
  ASSERT_TRUE(left.ok());
  for (const auto& k : left->elements)
    EXPECT_TRUE(k.str == "hearth:index" || k.str == "hearth:meta") << k.str << " left behind";
  // Not fetched again: no remote fetch at all (the index forgot it).
  const uint64_t fetches = counter(*b, "remote_misses") + counter(*b, "remote_corrupt");
  EXPECT_FALSE(b->lookup_radix(meta.ns, prompt).has_value());
  EXPECT_EQ(counter(*b, "remote_misses") + counter(*b, "remote_corrupt"), fetches);
  // B computes the prompt cold and saves it: published to Redis again, readable by A's
  // peers (a third node) bit-identical.
  auto good = payload_of(30000, 5);
  auto key = b->save(Tier::kRam, meta, good);
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(counter(*b, "remote_publishes"), 1u);
  auto c = open_node(redis.url());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->lookup_exact(*key).has_value());
  auto got = c->load(*key);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, good);
}

}  // namespace
}  // namespace hearth::cache
