// CrashTest: a child process saves to a disk tier in a loop and is SIGKILLed at
// random moments. After each kill the parent reopens the directory (restart
// scan) and checks the publish protocol's promises:
//   - no *.tmp file survives the scan;
//   - every row the index offers loads and verifies (CRC32C + key replay);
//   - every save the child reported complete (through a pipe, after save()
//     returned) is present and verifies.
// HEARTH_CRASH_KILLS sets the number of kills (default 200; `make crash-test`
// runs 5000).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "cache/cache_impl.h"
#include "delta_util.h"
#include "test_util.h"
#include "testing/cache_test_peer.h"

namespace hearth::cache {
namespace {

namespace fs = std::filesystem;

int kill_count() {
  const char* env = std::getenv("HEARTH_CRASH_KILLS");
  if (env != nullptr && std::atoi(env) > 0) return std::atoi(env);
  return 200;
}

CacheConfig crash_config(const std::string& dir) {
  CacheConfig c;
  c.disk_dir = dir;
  c.ram_quota_bytes = 0;
  c.sweep_interval_ms = 0;
  c.writer_threads = 1;
  return c;
}

[[noreturn]] void child_loop(const std::string& dir, int round, int fd) {
  auto cache = Cache::open(crash_config(dir));
  if (!cache.ok()) ::_exit(2);
  std::mt19937 rng(static_cast<uint32_t>(round) * 7919u + 1);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (uint32_t i = 0; std::chrono::steady_clock::now() < deadline; ++i) {
    std::vector<Token> toks = {static_cast<Token>(round), i};
    size_t extra = rng() % 64;
    for (size_t k = 0; k < extra; ++k) toks.push_back(rng());
    size_t size = 1024 + rng() % (192 * 1024);
    std::vector<uint8_t> payload(size);
    for (size_t k = 0; k < size; k += 64) payload[k] = static_cast<uint8_t>(rng());
    auto key = (*cache)->save(Tier::kDisk, testing::make_meta(toks), payload);
    if (key.ok()) {
      // <= PIPE_BUF: atomic, so the parent never sees half a key.
      if (::write(fd, key->data(), key->size()) != static_cast<ssize_t>(key->size())) ::_exit(3);
    }
  }
  ::_exit(0);
}

TEST(CrashTest, KilledWritersNeverLeaveBadRows) {
  testing::TempDir tmp;
  std::string dir = tmp.sub("disk");
  const int kills = kill_count();
  std::mt19937 rng(12345);
  uint64_t reported_total = 0;
  for (int round = 0; round < kills; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      child_loop(dir, round, fds[1]);
    }
    ::close(fds[1]);
    // Random kill moment: anywhere from during the child's own start-up scan
    // to a few saves in.
    // fdatasync + directory fsync make a save take milliseconds, so half the
    // rounds kill late enough for several publishes to complete.
    uint32_t window_us = (round % 2 == 0) ? 30000 : 200000;
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % window_us));
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
        << "child failed with status " << status;

    std::set<CacheKey> reported;
    CacheKey k;
    while (::read(fds[0], k.data(), k.size()) == static_cast<ssize_t>(k.size())) reported.insert(k);
    ::close(fds[0]);
    reported_total += reported.size();

    {
      auto opened = Cache::open(crash_config(dir));
      ASSERT_TRUE(opened.ok()) << opened.status().to_string();
      auto& cache = *opened;
      for (const auto& e : fs::directory_iterator(dir)) {
        ASSERT_NE(e.path().extension(), ".tmp") << "round " << round << ": " << e.path();
      }
      for (const auto& row : cache->dump()) {
        auto loaded = cache->load(row.key);
        ASSERT_TRUE(loaded.ok()) << "round " << round << ": row " << to_hex(row.key)
                                 << " fails verify: " << loaded.status().to_string();
      }
      for (const auto& key : reported) {
        ASSERT_TRUE(cache->lookup_exact(key)) << "round " << round << ": published row "
                                              << to_hex(key) << " lost";
        ASSERT_TRUE(CacheTestPeer::impl(*cache)
                        .files[2]
                        ->verify(CacheTestPeer::impl(*cache).files[2]->final_path(key), key)
                        .ok());
      }
      EXPECT_EQ(testing::counter(*cache, Counter::kCorruptFiles), 0u);
      // Keep the directory small so every round's scan stays fast.
      if (cache->row_count() > 64) cache->gc();
    }
  }
  std::printf("CrashTest: %d kills, %llu completed publishes checked\n", kills,
              static_cast<unsigned long long>(reported_total));
  EXPECT_GT(reported_total, 0u);
}

// The same with delta rows: the child grows conversations turn by turn, each row a delta
// of the last (up to depth 4). After every kill every row the index offers restores to
// exactly the whole payload of its tokens (no orphan is served), and every reported save
// is there.
[[noreturn]] void delta_child_loop(const std::string& dir, int round, int fd) {
  CacheConfig cfg = crash_config(dir);
  cfg.max_delta_depth = 4;
  auto cache = Cache::open(cfg);
  if (!cache.ok()) ::_exit(2);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (uint32_t conv = 0; std::chrono::steady_clock::now() < deadline; ++conv) {
    for (size_t len = 8; len <= 64; len += 8) {
      auto toks = testing::seq_tokens(len, static_cast<Token>(round * 100000 + conv * 100));
      auto key =
          (*cache)->save(Tier::kDisk, testing::layout_meta(toks), testing::layout_payload(toks));
      if (key.ok() && ::write(fd, key->data(), key->size()) != static_cast<ssize_t>(key->size()))
        ::_exit(3);
    }
  }
  ::_exit(0);
}

TEST(CrashTest, KilledDeltaWritersNeverServeAnOrphan) {
  testing::TempDir tmp;
  std::string dir = tmp.sub("disk");
  const int kills = std::max(20, kill_count() / 10);
  std::mt19937 rng(777);
  uint64_t deltas = 0;
  for (int round = 0; round < kills; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      delta_child_loop(dir, round, fds[1]);
    }
    ::close(fds[1]);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 150000));
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    std::set<CacheKey> reported;
    CacheKey k;
    while (::read(fds[0], k.data(), k.size()) == static_cast<ssize_t>(k.size())) reported.insert(k);
    ::close(fds[0]);
    CacheConfig cfg = crash_config(dir);
    cfg.max_delta_depth = 4;
    auto opened = Cache::open(cfg);
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    auto& cache = *opened;
    for (const auto& row : cache->dump()) {
      if (row.delta_depth > 0) ++deltas;
      KvcInfo info;
      auto loaded = cache->load(row.key, &info);
      ASSERT_TRUE(loaded.ok()) << "round " << round << ": " << loaded.status().to_string();
      ASSERT_EQ(*loaded, testing::layout_payload(info.tokens)) << "round " << round;
    }
    for (const auto& key : reported) {
      ASSERT_TRUE(cache->lookup_exact(key))
          << "round " << round << ": row " << to_hex(key) << " lost";
    }
    EXPECT_EQ(testing::counter(*cache, Counter::kDeltaBrokenChains), 0u);
    if (cache->row_count() > 64) cache->gc();
  }
  EXPECT_GT(deltas, 0u);
}

}  // namespace
}  // namespace hearth::cache
