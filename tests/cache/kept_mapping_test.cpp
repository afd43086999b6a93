// A large ram_file row this process saved is kept mapped (Row::file_map,
// Lease::resident): its view and its reads give the saved bytes; damage to its file
// (a byte flipped in place, a truncation) is a miss, never other bytes and never a
// crash; the mapping goes with the row, so an evicted row's tmpfs pages are not held;
// a restarted cache's row gets one after its first read; a small row, a cache told to
// pread and one with keep_ram_file_mappings off have none and read the same bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "hearth/cache/cache.h"
#include "test_util.h"

namespace hearth::cache {
namespace {

using testing::TempDir;

constexpr size_t kMiB = size_t{1} << 20;

// Whether this process maps the file at `path` (a line of /proc/self/maps names it).
bool mapped_here(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(path) != std::string::npos) return true;
  return false;
}

// Flips one byte of the file at `offset`, in place (the file keeps its length).
void flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.good()) << path;
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x20);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
  ASSERT_TRUE(f.good());
}

class KeptMapping : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_.ram_file_dir = dir_.sub("shm");
    cfg_.sweep_interval_ms = 0;
    open();
  }
  void open() {
    cache_.reset();
    auto c = Cache::open(cfg_);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    cache_ = std::move(c).value();
  }
  // Saves `payload` to the ram_file tier under a key of its own (seed); returns the key.
  CacheKey save(const std::vector<uint8_t>& payload, Token seed) {
    auto key =
        cache_->save(Tier::kRamFile, testing::make_meta(testing::seq_tokens(12, seed)), payload);
    EXPECT_TRUE(key.ok()) << key.status().to_string();
    return key.ok() ? *key : CacheKey{};
  }
  std::string path_of(const CacheKey& key) { return cache_->lookup_exact(key)->location; }

  TempDir dir_;
  CacheConfig cfg_;
  std::unique_ptr<Cache> cache_;
};

TEST_F(KeptMapping, ViewAndReadsOfAKeptMappingGiveTheSavedBytes) {
  // 9 MiB: the reads and the view's CRC are split over two threads too.
  for (size_t bytes : {2 * kMiB, 9 * kMiB + 123}) {
    SCOPED_TRACE(bytes);
    const std::vector<uint8_t> payload = testing::random_bytes(bytes, 3);
    const CacheKey key = save(payload, static_cast<Token>(bytes % 1000));
    EXPECT_TRUE(mapped_here(path_of(key)));
    auto lease = cache_->checkout(key);
    ASSERT_TRUE(lease.ok());
    EXPECT_TRUE(lease->resident());
    auto view = lease->view();
    ASSERT_TRUE(view.ok()) << view.status().to_string();
    EXPECT_TRUE(std::equal(view->begin(), view->end(), payload.begin(), payload.end()));
    std::vector<uint8_t> whole(payload.size());
    ASSERT_TRUE(lease->read_payload(whole).ok());
    EXPECT_TRUE(whole == payload);
    // Into three pieces that cut the payload anywhere.
    std::vector<uint8_t> a(12345), b(payload.size() / 2), c(payload.size() - a.size() - b.size());
    const std::span<uint8_t> pieces[] = {a, b, c};
    ASSERT_TRUE(lease->read_payload(std::span<const std::span<uint8_t>>(pieces)).ok());
    a.insert(a.end(), b.begin(), b.end());
    a.insert(a.end(), c.begin(), c.end());
    EXPECT_TRUE(a == payload);
  }
}

TEST_F(KeptMapping, DamageUnderAKeptMappingIsAMissNeverOtherBytes) {
  const std::vector<uint8_t> payload = testing::random_bytes(9 * kMiB, 5);
  // A flipped payload byte, seen through the view and through a read.
  for (int through_view = 0; through_view < 2; ++through_view) {
    SCOPED_TRACE(through_view ? "view" : "read_payload");
    const CacheKey key = save(payload, static_cast<Token>(100 + through_view));
    const std::string path = path_of(key);
    const uint64_t size = std::filesystem::file_size(path);
    flip_byte(path, size - payload.size() + payload.size() * 3 / 4);
    const uint64_t corrupt = testing::counter(*cache_, Counter::kCorruptFiles);
    auto lease = cache_->checkout(key);
    ASSERT_TRUE(lease.ok());
    Status st;
    if (through_view) {
      st = lease->view().status();
    } else {
      std::vector<uint8_t> out(payload.size());
      st = lease->read_payload(out);
    }
    EXPECT_EQ(st.code(), ErrorCode::kDataLoss) << st.to_string();
    EXPECT_GT(testing::counter(*cache_, Counter::kCorruptFiles), corrupt);
    EXPECT_FALSE(cache_->lookup_exact(key)) << "a corrupt row stays listed";
  }
  // A truncated file: a miss at checkout (its size no longer matches), no read of the
  // mapping past the file's end.
  const CacheKey key = save(payload, 200);
  std::filesystem::resize_file(path_of(key), payload.size() / 2);
  auto lease = cache_->checkout(key);
  EXPECT_FALSE(lease.ok());
  EXPECT_FALSE(cache_->lookup_exact(key));
}

TEST_F(KeptMapping, TheMappingGoesWithTheRow) {
  const CacheKey key = save(testing::random_bytes(2 * kMiB, 7), 300);
  const std::string path = path_of(key);
  ASSERT_TRUE(mapped_here(path));
  {
    auto lease = cache_->checkout(key);
    ASSERT_TRUE(lease.ok());
    EXPECT_EQ(cache_->gc(), 0u);  // pinned: not evicted, still mapped
    EXPECT_TRUE(mapped_here(path));
  }
  EXPECT_EQ(cache_->gc(), 1u);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(mapped_here(path)) << "an evicted row's file is still mapped";
}

// Reads a row's payload through a new lease; whether that lease was resident before
// the read (the read may queue the mapping, which a writer thread then makes).
bool read_back(Cache& cache, const CacheKey& key, const std::vector<uint8_t>& payload) {
  auto lease = cache.checkout(key);
  EXPECT_TRUE(lease.ok());
  if (!lease.ok()) return false;
  const bool resident = lease->resident();
  std::vector<uint8_t> out(payload.size());
  EXPECT_TRUE(lease->read_payload(out).ok());
  EXPECT_TRUE(out == payload);
  return resident;
}

TEST_F(KeptMapping, ARestartedRowGetsItsMappingAfterItsFirstRead) {
  const std::vector<uint8_t> payload = testing::random_bytes(2 * kMiB, 9);
  const CacheKey key = save(payload, 400);
  open();  // a restart: the row comes from the directory scan
  const std::string path = path_of(key);
  EXPECT_FALSE(mapped_here(path));
  EXPECT_FALSE(read_back(*cache_, key, payload));  // read the other way, mapping asked
  cache_->wait_idle();                             // the writer has made it
  EXPECT_TRUE(mapped_here(path));
  EXPECT_TRUE(read_back(*cache_, key, payload));
  // A view of a row without one asks too.
  const CacheKey viewed = save(payload, 401);
  open();
  {
    auto lease = cache_->checkout(viewed);
    ASSERT_TRUE(lease.ok());
    EXPECT_FALSE(lease->resident());
    auto view = lease->view();
    ASSERT_TRUE(view.ok());
    EXPECT_TRUE(std::equal(view->begin(), view->end(), payload.begin(), payload.end()));
  }
  cache_->wait_idle();
  EXPECT_TRUE(read_back(*cache_, viewed, payload));
}

TEST_F(KeptMapping, SmallRowsAndRowsUnderPreadOrWithKeepingOffHaveNone) {
  const std::vector<uint8_t> big = testing::random_bytes(2 * kMiB, 9);
  const std::vector<uint8_t> small = testing::random_bytes(kMiB - 1, 10);
  const CacheKey small_key = save(small, 500);
  EXPECT_FALSE(read_back(*cache_, small_key, small));
  cache_->wait_idle();
  EXPECT_FALSE(read_back(*cache_, small_key, small));
  for (int off = 0; off < 2; ++off) {
    SCOPED_TRACE(off ? "keep_ram_file_mappings off" : "ram_file_read kPread");
    cfg_ = CacheConfig{};
    cfg_.ram_file_dir = dir_.sub(off ? "shm-off" : "shm-pread");
    cfg_.sweep_interval_ms = 0;
    if (off) {
      cfg_.keep_ram_file_mappings = false;
    } else {
      cfg_.ram_file_read = CacheConfig::RamFileRead::kPread;
    }
    open();
    const CacheKey key = save(big, static_cast<Token>(600 + off));
    EXPECT_FALSE(mapped_here(path_of(key)));
    EXPECT_FALSE(read_back(*cache_, key, big));
    cache_->wait_idle();  // nothing was asked
    EXPECT_FALSE(read_back(*cache_, key, big));
    EXPECT_FALSE(mapped_here(path_of(key)));
  }
}

}  // namespace
}  // namespace hearth::cache
