// Each tier has its own writer (slots, threads, queue): a disk whose publishes hang
// neither refuses nor delays the saves of the RAM tier.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "cache/cache_impl.h"
#include "slow_link_io.h"
#include "test_util.h"
#include "testing/cache_test_peer.h"

namespace hearth::cache {
namespace {

using namespace std::chrono_literals;

// Real system calls, except that every link(2) (only the disk tier links) waits until
// released.
using StuckLinkIo = testing::SlowLinkIo;

TEST(TierWriter, StuckDiskDoesNotHoldUpRamSaves) {
  testing::TempDir dir;
  auto io = std::make_shared<StuckLinkIo>();
  CacheConfig c;
  c.ram_quota_bytes = 64ull << 20;
  c.disk_dir = dir.sub("disk");
  c.writer_threads = 1;
  c.writer_queue_depth = 1;
  c.evict_save_timeout_ms = 500;
  c.io = io;
  auto opened = Cache::open(c);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  std::unique_ptr<Cache> cache = std::move(opened).value();
  const auto payload = testing::random_bytes(50000, 3);

  // The disk writer's one thread hangs in link(2) and its one queue place fills.
  ASSERT_TRUE(
      cache->save_async(Tier::kDisk, testing::make_meta(testing::seq_tokens(16, 100)), payload));
  for (int i = 0; i < 200 && io->linking() == 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(io->linking(), 1);
  ASSERT_TRUE(
      cache->save_async(Tier::kDisk, testing::make_meta(testing::seq_tokens(16, 200)), payload));
  EXPECT_FALSE(
      cache->save_async(Tier::kDisk, testing::make_meta(testing::seq_tokens(16, 300)), payload))
      << "the disk tier's own queue bound still applies";

  // The RAM tier has its own writer: an async save is queued and published, and a
  // sync save gets a slot at once (one shared pool refused the first and timed out
  // the second while the disk hung).
  const auto async_meta = testing::make_meta(testing::seq_tokens(16, 400));
  ASSERT_TRUE(cache->save_async(Tier::kRam, async_meta, payload));
  const CacheKey async_key = make_key(async_meta.ns, async_meta.tokens);
  bool published = false;
  for (int i = 0; i < 200 && !published; ++i) {
    published = cache->lookup_exact(async_key).has_value();
    if (!published) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(published) << "RAM async save waited behind the stuck disk";
  auto sync = cache->save(Tier::kRam, testing::make_meta(testing::seq_tokens(16, 500)), payload);
  EXPECT_TRUE(sync.ok()) << sync.status().to_string();
  EXPECT_EQ(io->linking(), 1) << "the disk is still stuck";

  io->release();
  cache->wait_idle();
  EXPECT_EQ(cache->row_count(), 4u);  // two disk rows, two RAM rows
  EXPECT_EQ(testing::counter(*cache, Counter::kSavesDropped), 1u);
  for (const auto& w : CacheTestPeer::impl(*cache).writers) {
    if (w) {
      EXPECT_EQ(w->slots.in_use(), 0u);
    }
  }
}

// An async save is in flight from the moment save_async queues it, before a writer
// reserves the key: a resume lookup waits for it (rather than missing), dump() lists it
// with its fingerprint, and the namespace waits see it.
TEST(TierWriter, QueuedSaveIsInFlightBeforeAWriterReservesIt) {
  testing::TempDir dir;
  auto io = std::make_shared<StuckLinkIo>();
  CacheConfig c;
  c.disk_dir = dir.sub("disk");
  c.writer_threads = 1;
  c.writer_queue_depth = 1;
  c.evict_save_timeout_ms = 500;
  c.io = io;
  auto opened = Cache::open(c);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  std::unique_ptr<Cache> cache = std::move(opened).value();
  const auto payload = testing::random_bytes(20000, 5);
  const KeyNamespace ns = testing::test_ns(0x11);
  const KeyNamespace other = testing::test_ns(0x22);

  ASSERT_TRUE(cache->save_async(Tier::kDisk, testing::make_meta(testing::seq_tokens(16, 100), ns),
                                payload));
  for (int i = 0; i < 200 && io->linking() == 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(io->linking(), 1);
  const auto queued = testing::make_meta(testing::seq_tokens(16, 200), ns);
  const CacheKey key = make_key(queued.ns, queued.tokens);
  ASSERT_TRUE(cache->save_async(Tier::kDisk, queued, payload));
  EXPECT_FALSE(CacheTestPeer::impl(*cache).meta.reserved(key)) << "no writer has picked it up yet";
  EXPECT_TRUE(cache->save_pending(key));
  bool listed = false;
  for (const RowInfo& r : cache->dump()) {
    if (r.key != key) continue;
    listed = true;
    EXPECT_EQ(r.status, RowStatus::kReserved);
    EXPECT_EQ(r.n_tokens, 16u);
    EXPECT_EQ(r.fingerprint, ns.fingerprint);
  }
  EXPECT_TRUE(listed);
  // A save refused for a full queue is counted and never in flight.
  const auto refused = testing::make_meta(testing::seq_tokens(16, 300), ns);
  EXPECT_FALSE(cache->save_async(Tier::kDisk, refused, payload));
  EXPECT_FALSE(cache->save_pending(make_key(refused.ns, refused.tokens)));
  EXPECT_EQ(testing::counter(*cache, Counter::kSavesDropped), 1u);
  // A caller asks before packing a payload: a key in flight would be a duplicate (and is
  // counted as one), a key nowhere would not (and counts nothing).
  EXPECT_TRUE(cache->drop_duplicate_save(key));
  EXPECT_EQ(testing::counter(*cache, Counter::kDuplicateDropped), 1u);
  EXPECT_FALSE(cache->drop_duplicate_save(make_key(refused.ns, refused.tokens)));
  EXPECT_EQ(testing::counter(*cache, Counter::kDuplicateDropped), 1u);
  // Waits per namespace: another model's namespace has nothing in flight.
  EXPECT_TRUE(cache->wait_namespace_idle(other, 0));
  EXPECT_FALSE(cache->wait_namespace_idle(ns, 50));
  EXPECT_FALSE(cache->wait_idle_for(50));

  std::thread releaser([&] {
    std::this_thread::sleep_for(100ms);
    io->release();
  });
  auto hit = cache->lookup_exact_or_wait(key, 5000);
  releaser.join();
  ASSERT_TRUE(hit) << "the resume lookup missed a queued save";
  EXPECT_EQ(hit->fingerprint, ns.fingerprint);
  EXPECT_EQ(testing::counter(*cache, Counter::kHitsResume), 1u);
  EXPECT_TRUE(cache->wait_namespace_idle(ns, 5000));
  EXPECT_TRUE(cache->wait_idle_for(5000));
  EXPECT_FALSE(cache->save_pending(key));
  EXPECT_EQ(cache->dump().size(), 2u);
  EXPECT_TRUE(cache->drop_duplicate_save(key)) << "a published key is a duplicate too";
  EXPECT_EQ(testing::counter(*cache, Counter::kDuplicateDropped), 2u);
}

}  // namespace
}  // namespace hearth::cache
