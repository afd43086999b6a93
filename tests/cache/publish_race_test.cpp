// Interleavings of a writer's publish with the sweeper, eviction and rescans,
// forced through hooks in the CacheIo layer. A save that returned ok must stay
// loadable, whatever ran beside it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "cache/cache_impl.h"
#include "forwarding_io.h"
#include "test_util.h"
#include "testing/cache_test_peer.h"

namespace hearth::cache {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::TempDir;

// A one-shot event.
class Event {
 public:
  void set() {
    {
      std::lock_guard<std::mutex> l(mu_);
      set_ = true;
    }
    cv_.notify_all();
  }
  bool wait_for(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, d, [&] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// Real system calls with hooks run before link, unlink and fdatasync.
class HookedIo final : public testing::ForwardingIo {
 public:
  std::function<void(const std::string&)> before_link, after_link;  // gets the new name
  std::function<void(const std::string&)> before_unlink;
  std::function<void()> before_fdatasync;

  int fdatasync(int fd) override {
    if (before_fdatasync) before_fdatasync();
    return real->fdatasync(fd);
  }
  int link(const std::string& a, const std::string& b) override {
    if (before_link) before_link(b);
    int r = real->link(a, b);
    if (after_link) after_link(b);
    return r;
  }
  int unlink(const std::string& p) override {
    if (before_unlink) before_unlink(p);
    return real->unlink(p);
  }
};

struct Fixture {
  TempDir dir;
  std::shared_ptr<HookedIo> io = std::make_shared<HookedIo>();
  std::unique_ptr<Cache> cache;
  KvcBuildMeta meta = testing::make_meta(testing::seq_tokens(48));
  std::vector<uint8_t> payload = testing::random_bytes(60000, 11);
  CacheKey key = make_key(meta.ns, meta.tokens);
  std::string final_path;

  Fixture() {
    CacheConfig c;
    c.disk_dir = dir.sub("disk");
    c.sweep_interval_ms = 0;   // the tests run the sweeper themselves
    c.reservation_ttl_ms = 1;  // expired by the time anyone sweeps
    c.io = io;
    cache = std::move(Cache::open(c)).value();
    final_path = CacheTestPeer::impl(*cache).files[2]->final_path(key);
  }
  ~Fixture() {  // hooks capture test locals: detach them before those die
    io->before_link = io->after_link = nullptr;
    io->before_unlink = nullptr;
    io->before_fdatasync = nullptr;
  }
  size_t tmp_files() const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir.sub("disk")))
      n += e.path().extension() == ".tmp";
    return n;
  }
  // The save's row is in the index, its file verifies and loads as `payload`,
  // and the tier's byte account is exactly that row.
  void expect_row_intact() {
    auto row = cache->lookup_exact(key);
    ASSERT_TRUE(row);
    EXPECT_TRUE(fs::exists(final_path));
    auto loaded = cache->load(key);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    EXPECT_EQ(*loaded, payload);
    EXPECT_EQ(CacheTestPeer::impl(*cache).meta.tier_bytes(Tier::kDisk), row->size);
    EXPECT_FALSE(CacheTestPeer::impl(*cache).meta.reserved(key));
  }
};

// The reservation of a writer blocked inside link(2) expires. The sweeper must
// not find "no file yet" and then unlink the file the writer links meanwhile.
// The hook forces that order: a sweeper unlink of the final path first lets
// the writer's link through and waits for it to land.
TEST(PublishRace, SweeperNeverUnlinksAFileTheWriterIsLinking) {
  Fixture f;
  Event in_link, release, linked;
  f.io->before_link = [&](const std::string& to) {
    if (to != f.final_path) return;
    in_link.set();
    release.wait_for(10s);
  };
  f.io->after_link = [&](const std::string& to) {
    if (to == f.final_path) linked.set();
  };
  f.io->before_unlink = [&](const std::string& p) {
    if (p != f.final_path) return;
    release.set();
    linked.wait_for(2s);
  };
  Result<CacheKey> saved = Internal("not run");
  std::thread writer([&] { saved = f.cache->save(Tier::kDisk, f.meta, f.payload); });
  ASSERT_TRUE(in_link.wait_for(10s));
  std::this_thread::sleep_for(5ms);  // past the 1 ms TTL
  std::thread sweeper([&] { f.cache->sweep_reservations(); });
  // A correct sweeper waits for the link to finish; let it go after a while.
  std::this_thread::sleep_for(100ms);
  release.set();
  writer.join();
  sweeper.join();
  ASSERT_TRUE(saved.ok()) << saved.status().to_string();
  f.expect_row_intact();
  EXPECT_EQ(f.tmp_files(), 0u);
}

// A rescan while a save is writing its temp file keeps that file (the save
// then publishes), and still deletes stale temp files: this process's with a
// dead token, and other processes'.
TEST(PublishRace, RescanKeepsTempFilesOfSavesInFlight) {
  Fixture f;
  Event in_sync, release;
  f.io->before_fdatasync = [&] {
    in_sync.set();
    release.wait_for(10s);
  };
  Result<CacheKey> saved = Internal("not run");
  std::thread writer([&] { saved = f.cache->save(Tier::kDisk, f.meta, f.payload); });
  ASSERT_TRUE(in_sync.wait_for(10s));
  f.io->before_fdatasync = nullptr;
  CacheKey other = f.key;
  other[5] ^= 1;
  std::string stale_ours =
      f.dir.sub("disk/") + to_hex(other) + ".kvc." + std::to_string(::getpid()) + ".999999.tmp";
  std::string stale_theirs = f.dir.sub("disk/") + to_hex(other) + ".kvc.1.1.tmp";
  std::ofstream(stale_ours) << "left by a dead save";
  std::ofstream(stale_theirs) << "left by a dead process";
  ASSERT_EQ(f.tmp_files(), 3u);
  ASSERT_TRUE(f.cache->rescan_tier(Tier::kDisk).ok());
  EXPECT_EQ(f.tmp_files(), 1u);  // the writer's own
  EXPECT_FALSE(fs::exists(stale_ours));
  EXPECT_FALSE(fs::exists(stale_theirs));
  release.set();
  writer.join();
  ASSERT_TRUE(saved.ok()) << saved.status().to_string();
  EXPECT_FALSE(f.cache->tier_degraded(Tier::kDisk));
  f.expect_row_intact();
  EXPECT_EQ(f.tmp_files(), 0u);
}

// Eviction removes a row, then its file. A save of the same key that starts in
// between must not lose its file to that unlink: the hook runs such a save
// (for up to 300 ms) just before eviction's unlink of the path.
TEST(PublishRace, EvictionNeverUnlinksTheFileOfARowSavedAgain) {
  Fixture f;
  ASSERT_TRUE(f.cache->save(Tier::kDisk, f.meta, f.payload).ok());
  Result<CacheKey> saved = Internal("not run");
  Event done;
  std::thread writer;
  std::atomic<bool> armed{true};
  f.io->before_unlink = [&](const std::string& p) {
    if (p != f.final_path || !armed) return;
    armed = false;  // once: the hook runs on every thread that unlinks
    writer = std::thread([&] {
      saved = f.cache->save(Tier::kDisk, f.meta, f.payload);
      done.set();
    });
    done.wait_for(300ms);
  };
  EXPECT_EQ(f.cache->evict_bytes(1).rows, 1u);
  writer.join();
  ASSERT_TRUE(saved.ok()) << saved.status().to_string();
  f.expect_row_intact();
}

}  // namespace
}  // namespace hearth::cache
