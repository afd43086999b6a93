// Each tier has its own writer (slots, threads, queue): a disk whose publishes hang
// neither refuses nor delays the saves of the RAM tier.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "cache/cache_impl.h"
#include "forwarding_io.h"
#include "test_util.h"

namespace hearth::cache {
namespace {

using namespace std::chrono_literals;

// Real system calls, except that every link(2) (only the disk tier links) waits until
// released.
class StuckLinkIo final : public testing::ForwardingIo {
 public:
  void release() {
    {
      std::lock_guard<std::mutex> l(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }
  int linking() {
    std::lock_guard<std::mutex> l(mu_);
    return linking_;
  }

  int link(const std::string& a, const std::string& b) override {
    {
      std::unique_lock<std::mutex> l(mu_);
      ++linking_;
      cv_.wait_for(l, 20s, [&] { return released_; });
    }
    return real->link(a, b);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  int linking_ = 0;
};

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
  for (const auto& w : cache->internals().writers) {
    if (w) {
      EXPECT_EQ(w->slots.in_use(), 0u);
    }
  }
}

}  // namespace
}  // namespace hearth::cache
