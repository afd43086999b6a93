// The remote (Redis) tier against a real redis-server started per test: publish
// races between two "nodes", verified fetches, corruption, Redis killed and
// restarted, and the cross-node row index.
#include "cache/remote_tier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "cache/test_util.h"
#include "testing/redis_server.h"

namespace hearth::cache {
namespace {

using testing::make_meta;
using testing::seq_tokens;
using testing::test_ns;

// A whole KVC file with a payload of `n` bytes filled from `seed`.
std::vector<uint8_t> make_row(const KvcBuildMeta& meta, size_t n, uint8_t seed) {
  std::vector<uint8_t> payload(n);
  for (size_t i = 0; i < n; ++i) payload[i] = static_cast<uint8_t>(seed + i * 31);
  auto prefix = kvc_build_prefix(meta, payload);
  EXPECT_TRUE(prefix.ok());
  std::vector<uint8_t> row = *prefix;
  row.insert(row.end(), payload.begin(), payload.end());
  return row;
}

RemoteTierConfig cfg_for(const hearth::testing::RedisServer& r, uint64_t chunk = 4096) {
  RemoteTierConfig c;
  c.url = r.url();
  c.chunk_bytes = chunk;
  c.timeout_ms = 300;
  c.backoff_max_ms = 200;
  return c;
}

#define REQUIRE_REDIS(r) \
  if (!(r).available()) GTEST_SKIP() << (r).why()

TEST(RedisUrl, ParsesAndNamesTheBadField) {
  auto u = parse_redis_url("redis://10.0.0.5:6380/3");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "10.0.0.5");
  EXPECT_EQ(u->port, 6380);
  EXPECT_EQ(u->db, 3);
  auto d = parse_redis_url("redis://localhost");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->port, 6379);
  EXPECT_EQ(d->db, 0);
  EXPECT_NE(parse_redis_url("http://x:1").status().message().find("redis://"), std::string::npos);
  EXPECT_NE(parse_redis_url("redis://x:99999").status().message().find("port"), std::string::npos);
  EXPECT_NE(parse_redis_url("redis://x:1/abc").status().message().find("db"), std::string::npos);
  EXPECT_NE(parse_redis_url("redis://:1").status().message().find("host"), std::string::npos);
}

TEST(RemoteTierConfig, ValidationNamesTheField) {
  RemoteTierConfig c;
  c.url = "redis://h:1";
  c.chunk_bytes = 10;
  EXPECT_NE(validate_remote_tier_config(c).message().find("remote.chunk_bytes"), std::string::npos);
  c.chunk_bytes = 1 << 20;
  c.timeout_ms = 0;
  EXPECT_NE(validate_remote_tier_config(c).message().find("remote.timeout_ms"), std::string::npos);
  c.timeout_ms = 1;
  c.url = "redis://h:x";
  EXPECT_NE(validate_remote_tier_config(c).message().find("remote.url"), std::string::npos);
}

TEST(RemoteTier, ChunkedRowRoundTripsBitIdentical) {
  hearth::testing::RedisServer redis;
  REQUIRE_REDIS(redis);
  auto tier = RemoteTier::open(cfg_for(redis));
  ASSERT_TRUE(tier.ok()) << tier.status().message();
  auto meta = make_meta(seq_tokens(64));
  auto row = make_row(meta, 50000, 7);  // 13 chunks of 4 KiB
  const CacheKey key = make_key(meta.ns, meta.tokens);
  EXPECT_FALSE((*tier)->fetch(key).has_value());
  auto p = (*tier)->publish(key, row);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(*p, RemoteTier::Publish::kWon);
  auto got = (*tier)->fetch(key);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, row);
  auto c = (*tier)->counters();
  EXPECT_EQ(c.publishes, 1u);
  EXPECT_EQ(c.bytes_stored, row.size());
  EXPECT_EQ(c.hits, 1u);
  EXPECT_EQ(c.misses, 1u);
  // A row that does not verify against its key is never uploaded.
  CacheKey other = key;
  other[0] ^= 1;
  EXPECT_FALSE((*tier)->publish(other, row).ok());
}

TEST(RemoteTier, PublishRaceBetweenTwoNodesHasOneWinnerAndTheLoserAdopts) {
  hearth::testing::RedisServer redis;
  REQUIRE_REDIS(redis);
  auto a = RemoteTier::open(cfg_for(redis));
  auto b = RemoteTier::open(cfg_for(redis));
  ASSERT_TRUE(a.ok() && b.ok());
  for (int round = 0; round < 8; ++round) {
    auto meta = make_meta(seq_tokens(32, 100 + round * 50));
    const CacheKey key = make_key(meta.ns, meta.tokens);
    // Same key, different payload bytes: whoever wins, both nodes must then read
    // exactly the winner's row.
    auto row_a = make_row(meta, 40000, 1);
    auto row_b = make_row(meta, 40000, 2);
    std::atomic<int> go{0};
    Result<RemoteTier::Publish> ra = Internal("unset"), rb = Internal("unset");
    std::thread ta([&] {
      while (go.load() == 0) {
      }
      ra = (*a)->publish(key, row_a);
    });
    std::thread tb([&] {
      while (go.load() == 0) {
      }
      rb = (*b)->publish(key, row_b);
    });
    go = 1;
    ta.join();
    tb.join();
    ASSERT_TRUE(ra.ok() && rb.ok());
    EXPECT_NE(*ra, *rb) << "round " << round;  // exactly one won
    const auto& winner = *ra == RemoteTier::Publish::kWon ? row_a : row_b;
    EXPECT_EQ((*a)->fetch(key), winner);
    EXPECT_EQ((*b)->fetch(key), winner);
  }
  EXPECT_EQ((*a)->counters().publishes + (*b)->counters().publishes, 8u);
  EXPECT_EQ((*a)->counters().publish_lost + (*b)->counters().publish_lost, 8u);
  // The losers removed their chunks: only the winners' remain.
  auto raw = RedisClient::connect(*parse_redis_url(redis.url()), 1000);
  ASSERT_TRUE(raw.ok());
  auto keys = (*raw)->command({"KEYS", "hearth:chunk:*"});
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(keys->elements.size(), 8u * 10u);  // 40 KB + prefix = 10 chunks of 4 KiB
}

// The ways a remote row can be damaged in Redis, each applied to a published row.
enum class Damage {
  kPayloadByteFlipped,  // a byte of a payload chunk: the CRC32C fails
  kTruncated,           // the last chunk cut in half: the size fails
  kWrongKvcHeader,      // the KVC magic in chunk 0
  kLostChunk,           // a chunk gone (e.g. evicted by Redis's LRU)
  kManifestWrongSize,   // the manifest's byte count
  kManifestWrongMagic,  // the manifest's magic (the chunks still named)
  kManifestGarbage,     // the manifest unreadable (the chunks no longer named)
};

std::vector<std::string> keys_matching(RedisClient& raw, const std::string& pattern) {
  std::vector<std::string> out;
  auto r = raw.command({"KEYS", pattern});
  EXPECT_TRUE(r.ok());
  if (r.ok())
    for (const auto& e : r->elements) out.push_back(e.str);
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    // hearth:chunk:<hex>:<nonce>:<i>, in chunk order
    return std::stoul(a.substr(a.rfind(':') + 1)) < std::stoul(b.substr(b.rfind(':') + 1));
  });
  return out;
}

void apply(Damage d, RedisClient& raw) {
  const auto chunks = keys_matching(raw, "hearth:chunk:*");
  const auto rows = keys_matching(raw, "hearth:row:*");
  ASSERT_GE(chunks.size(), 3u);
  ASSERT_EQ(rows.size(), 1u);
  auto get = [&](const std::string& k) {
    auto r = raw.command({"GET", k});
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->str : std::string();
  };
  auto set = [&](const std::string& k, const std::string& v) {
    ASSERT_TRUE(raw.command({"SET", k, v}).ok());
  };
  std::string manifest = get(rows[0]);
  switch (d) {
    case Damage::kPayloadByteFlipped: {
      std::string c = get(chunks.back());
      c[c.size() / 2] = static_cast<char>(c[c.size() / 2] ^ 0x40);
      set(chunks.back(), c);
      break;
    }
    case Damage::kTruncated: {
      const std::string c = get(chunks.back());
      set(chunks.back(), c.substr(0, c.size() / 2));
      break;
    }
    case Damage::kWrongKvcHeader: {
      std::string c = get(chunks.front());
      c[0] = static_cast<char>(c[0] ^ 0xff);
      set(chunks.front(), c);
      break;
    }
    case Damage::kLostChunk:
      ASSERT_TRUE(raw.command({"DEL", chunks[1]}).ok());
      break;
    case Damage::kManifestWrongSize: {
      const size_t sp = manifest.rfind(' ');
      set(rows[0],
          manifest.substr(0, sp + 1) + std::to_string(std::stoull(manifest.substr(sp + 1)) + 1));
      break;
    }
    case Damage::kManifestWrongMagic:
      manifest[0] = 'X';
      set(rows[0], manifest);
      break;
    case Damage::kManifestGarbage:
      set(rows[0], "\x01garbage");
      break;
  }
}

// A damaged remote row is a counted miss, never bytes; it is deleted from Redis (the
// manifest, its chunks, its meta entry) so no node fetches it again, and the key can
// then be published afresh.
TEST(RemoteTier, CorruptRemoteRowIsACountedMissAndIsDeleted) {
  hearth::testing::RedisServer redis;
  REQUIRE_REDIS(redis);
  auto tier = RemoteTier::open(cfg_for(redis));
  ASSERT_TRUE(tier.ok());
  auto raw = RedisClient::connect(*parse_redis_url(redis.url()), 1000);
  ASSERT_TRUE(raw.ok());
  auto meta = make_meta(seq_tokens(16));
  auto row = make_row(meta, 20000, 3);  // 5 chunks of 4 KiB
  const CacheKey key = make_key(meta.ns, meta.tokens);
  const Damage all[] = {Damage::kPayloadByteFlipped, Damage::kTruncated,
                        Damage::kWrongKvcHeader,     Damage::kLostChunk,
                        Damage::kManifestWrongSize,  Damage::kManifestWrongMagic,
                        Damage::kManifestGarbage};
  uint64_t n = 0;
  for (Damage d : all) {
    SCOPED_TRACE("damage " + std::to_string(static_cast<int>(d)));
    ASSERT_TRUE((*raw)->command({"FLUSHALL"}).ok());
    auto p = (*tier)->publish(key, row);
    ASSERT_TRUE(p.ok());
    ASSERT_EQ(*p, RemoteTier::Publish::kWon);
    ASSERT_NO_FATAL_FAILURE(apply(d, **raw));
    RemoteTier::Fetch outcome = RemoteTier::Fetch::kHit;
    EXPECT_FALSE((*tier)->fetch(key, &outcome).has_value());
    EXPECT_EQ(outcome, RemoteTier::Fetch::kCorrupt);
    ++n;
    EXPECT_EQ((*tier)->counters().corrupt, n);
    EXPECT_EQ((*tier)->counters().corrupt_deleted, n);
    EXPECT_TRUE(keys_matching(**raw, "hearth:row:*").empty());
    auto hlen = (*raw)->command({"HLEN", "hearth:meta"});
    ASSERT_TRUE(hlen.ok());
    EXPECT_EQ(hlen->integer, 0) << "the index entry goes with the row";
    // Chunks are deleted whenever the manifest still names them.
    EXPECT_EQ(keys_matching(**raw, "hearth:chunk:*").empty(), d != Damage::kManifestGarbage);
    // Not fetched again: a plain miss.
    EXPECT_FALSE((*tier)->fetch(key, &outcome).has_value());
    EXPECT_EQ(outcome, RemoteTier::Fetch::kMiss);
    // The next save of the key publishes a good row.
    p = (*tier)->publish(key, row);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, RemoteTier::Publish::kWon);
    EXPECT_EQ((*tier)->fetch(key, &outcome), row);
    EXPECT_EQ(outcome, RemoteTier::Fetch::kHit);
  }
  EXPECT_EQ((*tier)->counters().hits, n);
  EXPECT_EQ((*tier)->counters().errors, 0u);
  EXPECT_FALSE((*tier)->degraded());
}

// The delete compares the manifest: a row published again under the key since the
// corrupt one was read (another node's good row) is left alone.
TEST(RemoteTier, CorruptRowDeleteSparesARowPublishedSince) {
  hearth::testing::RedisServer redis;
  REQUIRE_REDIS(redis);
  auto tier = RemoteTier::open(cfg_for(redis));
  ASSERT_TRUE(tier.ok());
  auto raw = RedisClient::connect(*parse_redis_url(redis.url()), 1000);
  ASSERT_TRUE(raw.ok());
  auto meta = make_meta(seq_tokens(16));
  auto row = make_row(meta, 20000, 3);
  const CacheKey key = make_key(meta.ns, meta.tokens);
  ASSERT_TRUE((*tier)->publish(key, row).ok());
  const auto rows = keys_matching(**raw, "hearth:row:*");
  ASSERT_EQ(rows.size(), 1u);
  auto manifest = (*raw)->command({"GET", rows[0]});
  ASSERT_TRUE(manifest.ok());
  const size_t n_chunks = keys_matching(**raw, "hearth:chunk:*").size();
  // A manifest read earlier (another nonce): nothing is deleted.
  EXPECT_FALSE((*tier)->delete_corrupt(key, "KVR1 0123456789abcdef 5 20100"));
  EXPECT_EQ(keys_matching(**raw, "hearth:row:*").size(), 1u);
  EXPECT_EQ(keys_matching(**raw, "hearth:chunk:*").size(), n_chunks);
  EXPECT_EQ((*tier)->fetch(key), row);
  EXPECT_EQ((*tier)->counters().corrupt_deleted, 0u);
  // The manifest that stands: all of it goes.
  EXPECT_TRUE((*tier)->delete_corrupt(key, manifest->str));
  EXPECT_TRUE(keys_matching(**raw, "hearth:row:*").empty());
  EXPECT_TRUE(keys_matching(**raw, "hearth:chunk:*").empty());
  EXPECT_FALSE((*tier)->fetch(key).has_value());
  EXPECT_EQ((*tier)->counters().corrupt_deleted, 1u);
}

TEST(RemoteTier, RedisKilledDegradesCountsAndRecoversAfterRestart) {
  hearth::testing::RedisServer redis;
  REQUIRE_REDIS(redis);
  auto tier = RemoteTier::open(cfg_for(redis));
  ASSERT_TRUE(tier.ok());
  auto meta = make_meta(seq_tokens(16));
  auto row = make_row(meta, 10000, 5);
  const CacheKey key = make_key(meta.ns, meta.tokens);
  ASSERT_TRUE((*tier)->publish(key, row).ok());
  ASSERT_TRUE((*tier)->fetch(key).has_value());  // a pooled connection now exists
  redis.kill();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) EXPECT_FALSE((*tier)->fetch(key).has_value());
  EXPECT_FALSE((*tier)->publish(key, row).ok());
  // Degraded calls return at once: 21 calls well under 21 timeouts.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2000));
  auto c = (*tier)->counters();
  EXPECT_EQ(c.degraded, 1u);
  EXPECT_GE(c.errors, 1u);
  EXPECT_GE(c.skipped, 1u);
  ASSERT_TRUE(redis.restart());  // empty: no persistence
  bool recovered = false;
  for (int i = 0; i < 100 && !recovered; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    recovered = (*tier)->publish(key, row).ok();
  }
  ASSERT_TRUE(recovered);
  EXPECT_FALSE((*tier)->degraded());
  EXPECT_EQ((*tier)->counters().recoveries, 1u);
  EXPECT_EQ((*tier)->fetch(key), row);
}

// A hung Redis (SIGSTOP: the kernel still accepts connections, nothing replies):
// the first call waits timeout_ms and fails, the tier degrades and answers at once
// until the backoff lets a call through; once Redis runs again the tier recovers.
TEST(RemoteTier, HungRedisTimesOutDegradesAndRecovers) {
  hearth::testing::RedisServer redis;
  REQUIRE_REDIS(redis);
  auto tier = RemoteTier::open(cfg_for(redis));  // timeout_ms 300
  ASSERT_TRUE(tier.ok());
  auto meta = make_meta(seq_tokens(16));
  auto row = make_row(meta, 10000, 5);
  const CacheKey key = make_key(meta.ns, meta.tokens);
  ASSERT_TRUE((*tier)->publish(key, row).ok());
  redis.pause();
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  RemoteTier::Fetch outcome = RemoteTier::Fetch::kHit;
  EXPECT_FALSE((*tier)->fetch(key, &outcome).has_value());
  const auto first = Clock::now() - t0;
  EXPECT_EQ(outcome, RemoteTier::Fetch::kUnavailable);
  EXPECT_GE(first, std::chrono::milliseconds(250)) << "the command timeout was not waited";
  EXPECT_LT(first, std::chrono::milliseconds(2000)) << "bounded by timeout_ms";
  EXPECT_TRUE((*tier)->degraded());
  t0 = Clock::now();
  for (int i = 0; i < 10; ++i) EXPECT_FALSE((*tier)->fetch(key).has_value());
  // Skipped at once while degraded (the 100 ms backoff may let one or two through,
  // each waiting timeout_ms): far below ten timeouts.
  EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(1500));
  EXPECT_GE((*tier)->counters().skipped, 1u);
  redis.resume();
  std::optional<std::vector<uint8_t>> got;
  for (int i = 0; i < 100 && !got; ++i) {
    got = (*tier)->fetch(key);
    if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(got, row) << "the row survived the pause: Redis was hung, not restarted";
  EXPECT_FALSE((*tier)->degraded());
  EXPECT_EQ((*tier)->counters().recoveries, 1u);
}

// A full Redis without eviction (noeviction answers writes with -OOM): the publish
// fails as a counted error (the tier degraded, the row only local), the chunks it
// stored are freed, reads still work once the backoff passes, and no half-written row
// is visible.
TEST(RemoteTier, FullRedisFailsThePublishAndLeavesNoPartialRow) {
  hearth::testing::RedisServer redis({"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"});
  REQUIRE_REDIS(redis);
  auto tier = RemoteTier::open(cfg_for(redis, 64 << 10));
  ASSERT_TRUE(tier.ok());
  auto small = make_meta(seq_tokens(16));
  auto small_row = make_row(small, 10000, 5);
  const CacheKey small_key = make_key(small.ns, small.tokens);
  ASSERT_TRUE((*tier)->publish(small_key, small_row).ok());
  auto big = make_meta(seq_tokens(16, 777));
  auto big_row = make_row(big, 8 << 20, 6);  // 4x maxmemory
  const CacheKey big_key = make_key(big.ns, big.tokens);
  auto p = (*tier)->publish(big_key, big_row);
  EXPECT_FALSE(p.ok());
  EXPECT_GE((*tier)->counters().errors, 1u);
  EXPECT_TRUE((*tier)->degraded());
  // The chunks it managed to store were deleted again: only the small row's remain.
  auto raw = RedisClient::connect(*parse_redis_url(redis.url()), 1000);
  ASSERT_TRUE(raw.ok());
  EXPECT_TRUE(keys_matching(**raw, "hearth:chunk:" + to_hex(big_key) + ":*").empty());
  EXPECT_FALSE(keys_matching(**raw, "hearth:chunk:" + to_hex(small_key) + ":*").empty());
  std::optional<std::vector<uint8_t>> got;
  for (int i = 0; i < 100 && !got; ++i) {
    got = (*tier)->fetch(small_key);
    if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(got, small_row) << "reads go on in a full Redis";
  EXPECT_FALSE((*tier)->degraded());
  RemoteTier::Fetch outcome = RemoteTier::Fetch::kHit;
  EXPECT_FALSE((*tier)->fetch(big_key, &outcome).has_value());
  EXPECT_EQ(outcome, RemoteTier::Fetch::kMiss) << "no manifest: the half-written row is invisible";
}

TEST(RemoteTier, StartsDegradedWhenRedisIsDown) {
  hearth::testing::RedisServer redis;
  REQUIRE_REDIS(redis);
  auto cfg = cfg_for(redis);
  redis.kill();
  auto tier = RemoteTier::open(cfg);
  ASSERT_TRUE(tier.ok());
  EXPECT_TRUE((*tier)->degraded());
}

TEST(RemoteTier, IndexShowsRowsPublishedByAnotherNode) {
  hearth::testing::RedisServer redis;
  REQUIRE_REDIS(redis);
  auto a = RemoteTier::open(cfg_for(redis));
  ASSERT_TRUE(a.ok());
  auto meta1 = make_meta(seq_tokens(40, 1000));
  auto meta2 = make_meta(seq_tokens(24, 5000), test_ns(0x11));
  auto row1 = make_row(meta1, 9000, 1);
  auto row2 = make_row(meta2, 9000, 2);
  ASSERT_TRUE((*a)->publish(make_key(meta1.ns, meta1.tokens), row1).ok());
  // Node B starts later: the full resync sees A's first row with its tokens and
  // namespace; the stream then delivers the next one.
  auto b = RemoteTier::open(cfg_for(redis));
  ASSERT_TRUE(b.ok());
  auto all = (*b)->scan_index();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].key, make_key(meta1.ns, meta1.tokens));
  EXPECT_EQ((*all)[0].info.tokens, meta1.tokens);
  EXPECT_EQ((*all)[0].info.ns, meta1.ns);
  EXPECT_EQ((*all)[0].size, row1.size());
  std::string last = "$";
  auto none = (*b)->read_index(&last);
  ASSERT_TRUE(none.ok());
  last = "0";
  auto first = (*b)->read_index(&last);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 1u);
  ASSERT_TRUE((*a)->publish(make_key(meta2.ns, meta2.tokens), row2).ok());
  auto next = (*b)->read_index(&last);
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->size(), 1u);
  EXPECT_EQ((*next)[0].info.tokens, meta2.tokens);
  EXPECT_EQ((*next)[0].info.ns, meta2.ns);
  EXPECT_EQ((*b)->fetch((*next)[0].key), row2);
}

}  // namespace
}  // namespace hearth::cache
