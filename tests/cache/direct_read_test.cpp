// Disk-tier rows whose pages are not in the page cache are read with O_DIRECT
// (src/cache/direct_read.h): the bytes delivered are the bytes saved, in destinations
// that cross the 4 MiB request boundaries at odd offsets; a damaged row is still caught
// by its CRC before it is used; a read error degrades the tier; a row in the page cache
// is read through it.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <set>

#include "cache/direct_read.h"
#include "forwarding_io.h"
#include "hearth/cache/cache.h"
#include "test_util.h"

namespace hearth::cache {
namespace {

using testing::TempDir;

// Records the descriptors opened with O_DIRECT; optionally fails their reads.
class DirectIo : public testing::ForwardingIo {
 public:
  std::atomic<int> direct_opens{0};
  std::atomic<bool> fail_direct_reads{false};
  int open(const std::string& p, int f, mode_t m) override {
    const int fd = real->open(p, f, m);
    if (fd >= 0 && (f & O_DIRECT)) {
      direct_opens++;
      direct_fd_ = fd;
    }
    return fd;
  }
  ssize_t pread(int fd, void* b, size_t n, uint64_t off) override {
    if (fail_direct_reads && fd == direct_fd_) return -EIO;
    return real->pread(fd, b, n, off);
  }

 private:
  std::atomic<int> direct_fd_{-1};
};

// Drops a file's pages from the page cache; false when they stay (tmpfs, say).
bool drop_cached(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  struct stat st {};
  ::fstat(fd, &st);
  const double cached =
      cached_fraction(fd, static_cast<uint64_t>(st.st_size), 0, static_cast<uint64_t>(st.st_size));
  ::close(fd);
  return cached < 0.5;
}

class DirectReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_.disk_dir = dir_.sub("disk");
    cfg_.sweep_interval_ms = 0;
    cfg_.direct_read_min_bytes = 1;
    cfg_.io = io_;
    auto c = Cache::open(cfg_);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    cache_ = std::move(c).value();
    // Three requests, the last one ending mid-block.
    payload_ = testing::random_bytes(2 * kDirectRequest + 12345, 11);
    auto key = cache_->save(Tier::kDisk, testing::make_meta(testing::seq_tokens(7)), payload_);
    ASSERT_TRUE(key.ok()) << key.status().to_string();
    key_ = *key;
    path_ = cfg_.disk_dir + "/" + to_hex(key_) + ".kvc";
  }

  // Reads the row into three spans that straddle the request boundaries.
  Status read_back(std::vector<uint8_t>& out) {
    out.assign(payload_.size(), 0);
    auto lease = cache_->checkout(key_);
    if (!lease.ok()) return lease.status();
    const size_t a = kDirectRequest - 1000, b = kDirectRequest + 777;
    const std::span<uint8_t> spans[3] = {
        {out.data(), a}, {out.data() + a, b}, {out.data() + a + b, out.size() - a - b}};
    return lease->read_payload(std::span<const std::span<uint8_t>>(spans));
  }

  TempDir dir_;
  std::shared_ptr<DirectIo> io_ = std::make_shared<DirectIo>();
  CacheConfig cfg_;
  std::unique_ptr<Cache> cache_;
  std::vector<uint8_t> payload_;
  CacheKey key_{};
  std::string path_;
};

TEST_F(DirectReadTest, ColdRowReadsBackExactlyThroughODirect) {
  if (!drop_cached(path_)) GTEST_SKIP() << "the page cache of " << path_ << " cannot be dropped";
  std::vector<uint8_t> out;
  Status st = read_back(out);
  ASSERT_TRUE(st.ok()) << st.to_string();
  if (io_->direct_opens == 0) GTEST_SKIP() << "the file system refuses O_DIRECT";
  EXPECT_TRUE(out == payload_);
  // Read again, cold again: the same bytes (the request buffers are reused).
  ASSERT_TRUE(drop_cached(path_));
  ASSERT_TRUE(read_back(out).ok());
  EXPECT_TRUE(out == payload_);
  EXPECT_EQ(io_->direct_opens, 2);
}

TEST_F(DirectReadTest, DamagedColdRowIsDroppedNeverUsed) {
  // One payload byte flipped in the middle request.
  const int fd = ::open(path_.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  const off_t at = st.st_size - static_cast<off_t>(payload_.size()) + kDirectRequest + 5;
  uint8_t byte = 0;
  ASSERT_EQ(::pread(fd, &byte, 1, at), 1);
  byte ^= 0x10;
  ASSERT_EQ(::pwrite(fd, &byte, 1, at), 1);
  ::fdatasync(fd);
  ::close(fd);
  if (!drop_cached(path_)) GTEST_SKIP() << "the page cache of " << path_ << " cannot be dropped";
  std::vector<uint8_t> out;
  Status read = read_back(out);
  EXPECT_EQ(read.code(), ErrorCode::kDataLoss) << read.to_string();
  if (io_->direct_opens == 0) GTEST_SKIP() << "the file system refuses O_DIRECT";
  EXPECT_EQ(testing::counter(*cache_, Counter::kCorruptFiles), 1u);
  EXPECT_EQ(cache_->checkout(key_).status().code(), ErrorCode::kNotFound);
}

TEST_F(DirectReadTest, ReadErrorDegradesTheTier) {
  if (!drop_cached(path_)) GTEST_SKIP() << "the page cache of " << path_ << " cannot be dropped";
  io_->fail_direct_reads = true;
  std::vector<uint8_t> out;
  Status st = read_back(out);
  if (io_->direct_opens == 0) GTEST_SKIP() << "the file system refuses O_DIRECT";
  EXPECT_EQ(st.code(), ErrorCode::kIo) << st.to_string();
  EXPECT_TRUE(cache_->tier_degraded(Tier::kDisk));
}

TEST_F(DirectReadTest, CachedRowIsReadThroughThePageCache) {
  std::vector<uint8_t> out;
  ASSERT_TRUE(read_back(out).ok());  // a buffered or direct read; then read it buffered
  const int fd = ::open(path_.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> all(payload_.size() + 4096);
  while (::read(fd, all.data(), all.size()) > 0) {
  }
  ::close(fd);
  const int before = io_->direct_opens;
  ASSERT_TRUE(read_back(out).ok());
  EXPECT_TRUE(out == payload_);
  EXPECT_EQ(io_->direct_opens, before);
}

TEST_F(DirectReadTest, SmallRowsStayBuffered) {
  cache_.reset();
  cfg_.direct_read_min_bytes = payload_.size() + 1;
  auto c = Cache::open(cfg_);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  cache_ = std::move(c).value();
  if (!drop_cached(path_)) GTEST_SKIP() << "the page cache of " << path_ << " cannot be dropped";
  std::vector<uint8_t> out;
  ASSERT_TRUE(read_back(out).ok());
  EXPECT_TRUE(out == payload_);
  EXPECT_EQ(io_->direct_opens, 0);
}

}  // namespace
}  // namespace hearth::cache
