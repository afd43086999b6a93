// The tier directory is hearth's only when it says so: a missing one is created 0700
// and marked; an existing one is used only when empty or marked, never chmodded and
// never cleaned of files hearth did not write; one process at a time holds it. And a
// full disk refuses saves without making the rows already on it miss.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "cache/file_tier.h"
#include "forwarding_io.h"
#include "hearth/cache/cache.h"
#include "test_util.h"

namespace hearth::cache {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

CacheConfig disk_config(const std::string& dir) {
  CacheConfig c;
  c.disk_dir = dir;
  c.sweep_interval_ms = 0;
  return c;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(CacheDir, MissingDirectoryIsCreatedPrivateAndMarked) {
  TempDir d;
  const std::string dir = d.sub("a/b/disk");
  auto cache = Cache::open(disk_config(dir));
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  EXPECT_EQ(mode_of(dir), 0700u);
  EXPECT_EQ(mode_of(d.sub("a")), 0700u);
  EXPECT_TRUE(fs::exists(dir + "/" + FileTier::kMarkerName));
  EXPECT_EQ(mode_of(dir + "/" + FileTier::kMarkerName), 0600u);
}

TEST(CacheDir, ForeignDirectoryIsRefusedAndLeftAlone) {
  TempDir d;
  const std::string dir = d.sub("shared");
  fs::create_directories(dir);
  ASSERT_EQ(::chmod(dir.c_str(), 01777), 0);
  for (const char* name : {"notes.txt", "old.tmp", "junk.kvc"}) std::ofstream(dir + "/" + name) << "x";
  auto cache = Cache::open(disk_config(dir));
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(cache.status().message().find(FileTier::kMarkerName), std::string::npos)
      << cache.status().message();
  EXPECT_EQ(mode_of(dir), 01777u) << "the sticky bit must survive";
  for (const char* name : {"notes.txt", "old.tmp", "junk.kvc"}) {
    EXPECT_TRUE(fs::exists(dir + "/" + name)) << name << " was deleted";
  }
  EXPECT_FALSE(fs::exists(dir + "/" + FileTier::kMarkerName));
}

TEST(CacheDir, EmptyExistingDirectoryIsUsedWithItsModeUnchanged) {
  TempDir d;
  const std::string dir = d.sub("empty");
  fs::create_directories(dir);
  ASSERT_EQ(::chmod(dir.c_str(), 01777), 0);
  {
    auto cache = Cache::open(disk_config(dir));
    ASSERT_TRUE(cache.ok()) << cache.status().to_string();
    auto meta = testing::make_meta(testing::seq_tokens(8));
    ASSERT_TRUE((*cache)->save(Tier::kDisk, meta, testing::random_bytes(64, 1)).ok());
  }
  EXPECT_EQ(mode_of(dir), 01777u);
  // Marked now: it is hearth's on the next start, rows and all.
  auto again = Cache::open(disk_config(dir));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ((*again)->row_count(), 1u);
}

TEST(CacheDir, SecondProcessIsRefusedWhileTheFirstHoldsIt) {
  TempDir d;
  const std::string dir = d.sub("disk");
  auto first = Cache::open(disk_config(dir));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  auto second = Cache::open(disk_config(dir));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(second.status().message().find("in use"), std::string::npos)
      << second.status().message();
  first->reset();
  auto third = Cache::open(disk_config(dir));
  EXPECT_TRUE(third.ok()) << third.status().to_string();
}

// Writes fail with ENOSPC while `full` is set; reads are untouched.
class FullDiskIo : public testing::ForwardingIo {
 public:
  std::atomic<bool> full{false};
  ssize_t pwrite(int fd, const void* b, size_t n, uint64_t off) override {
    if (full.load()) return -ENOSPC;
    return ForwardingIo::pwrite(fd, b, n, off);
  }
};

TEST(CacheDir, FullDiskRefusesSavesButRowsOnItStillHit) {
  TempDir d;
  auto io = std::make_shared<FullDiskIo>();
  CacheConfig cfg = disk_config(d.sub("disk"));
  cfg.io = io;
  auto opened = Cache::open(cfg);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  Cache& cache = **opened;
  auto kept = testing::make_meta(testing::seq_tokens(8));
  const auto payload = testing::random_bytes(256, 2);
  auto key = cache.save(Tier::kDisk, kept, payload);
  ASSERT_TRUE(key.ok()) << key.status().to_string();

  io->full = true;
  auto refused = cache.save(Tier::kDisk, testing::make_meta(testing::seq_tokens(9, 50)), payload);
  EXPECT_FALSE(refused.ok());
  EXPECT_TRUE(cache.tier_degraded(Tier::kDisk));
  // The row already on disk is still a hit and still loads.
  ASSERT_TRUE(cache.lookup_exact(*key));
  auto loaded = cache.load(*key);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(*loaded, payload);

  io->full = false;
  ASSERT_TRUE(cache.rescan_tier(Tier::kDisk).ok());
  EXPECT_FALSE(cache.tier_degraded(Tier::kDisk));
  EXPECT_TRUE(cache.save(Tier::kDisk, testing::make_meta(testing::seq_tokens(9, 50)), payload).ok());
}

}  // namespace
}  // namespace hearth::cache
