// Fault injection through the CacheIo seam: every failure must end in a clean
// error (save) or a counted miss (load), never a wrong payload.
#include <gtest/gtest.h>

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "cache/cache_impl.h"
#include "forwarding_io.h"
#include "test_util.h"
#include "testing/cache_test_peer.h"

namespace hearth::cache {
namespace {

namespace fs = std::filesystem;

// Corrupts the stored file of `payload`: the byte `from_end` bytes before the end
// (the payload ends the file) gets some of its bits flipped.
void flip_payload_byte(const std::string& path, const std::vector<uint8_t>& payload,
                       size_t from_end) {
  std::fstream fl(path, std::ios::in | std::ios::out | std::ios::binary);
  fl.seekp(-static_cast<std::streamoff>(from_end), std::ios::end);
  fl.put(static_cast<char>(0x5A ^ payload[payload.size() - from_end]));
}
using testing::TempDir;

enum class Op { kOpen, kWrite, kRead, kFdatasync, kFsync, kLink, kUnlink };

class FaultyIo final : public testing::ForwardingIo {
 public:
  std::atomic<int> fail_op{-1};
  std::atomic<int> fail_errno{EIO};
  std::atomic<bool> short_writes{false};

  bool hit(Op op) { return fail_op.load() == static_cast<int>(op); }

  int open(const std::string& p, int flags, mode_t mode) override {
    if (hit(Op::kOpen)) return -fail_errno;
    return real->open(p, flags, mode);
  }
  ssize_t pwrite(int fd, const void* b, size_t n, uint64_t off) override {
    if (hit(Op::kWrite)) return -fail_errno;
    if (short_writes && n > 1) n = n / 2;  // legal short write: must be retried
    return real->pwrite(fd, b, n, off);
  }
  ssize_t pread(int fd, void* b, size_t n, uint64_t off) override {
    if (hit(Op::kRead)) return -fail_errno;
    if (fail_reads_from >= 0 && off + n > static_cast<uint64_t>(fail_reads_from.load()))
      return -EIO;
    return real->pread(fd, b, n, off);
  }
  std::atomic<int64_t> fail_reads_from{-1};  // preads reaching this file offset fail
  // A failed read fails the mapping too (the reads then go through pread, which fails).
  int map_read(int fd, size_t len, const void** out) override {
    if (hit(Op::kRead)) return -fail_errno;
    ++maps;
    return real->map_read(fd, len, out);
  }
  std::atomic<int> maps{0};  // mappings made
  int fdatasync(int fd) override { return hit(Op::kFdatasync) ? -fail_errno : real->fdatasync(fd); }
  int fsync(int fd) override { return hit(Op::kFsync) ? -fail_errno : real->fsync(fd); }
  int link(const std::string& a, const std::string& b) override {
    return hit(Op::kLink) ? -fail_errno : real->link(a, b);
  }
  int unlink(const std::string& p) override {
    return hit(Op::kUnlink) ? -fail_errno : real->unlink(p);
  }
};

struct Fixture {
  TempDir dir;
  std::shared_ptr<FaultyIo> io = std::make_shared<FaultyIo>();
  std::unique_ptr<Cache> cache;
  CacheConfig config;
  explicit Fixture(CacheConfig::RamFileRead ram_file_read = CacheConfig::RamFileRead::kAuto) {
    config.disk_dir = dir.sub("disk");
    config.ram_file_dir = dir.sub("shm");
    config.sweep_interval_ms = 0;
    config.ram_file_read = ram_file_read;
    config.io = io;
    cache = std::move(Cache::open(config)).value();
  }
  // The cache opened again over its directories, with no kept mappings of ram_file rows
  // (Row::file_map): a large one is read the other ways on every read.
  void restart() {
    cache.reset();
    config.keep_ram_file_mappings = false;
    cache = std::move(Cache::open(config)).value();
    io->maps = 0;
  }
  // Saves payload as a 64-token row on `tier`; the test fails here if the save does.
  CacheKey save_row(Tier tier, const std::vector<uint8_t>& payload) {
    auto key = cache->save(tier, testing::make_meta(testing::seq_tokens(64)), payload);
    EXPECT_TRUE(key.ok()) << key.status().to_string();
    return key.ok() ? *key : CacheKey{};
  }
  bool no_tmp_files() const {
    for (const auto& e : fs::directory_iterator(dir.sub("disk"))) {
      if (e.path().extension() == ".tmp") return false;
    }
    return true;
  }
};

class SaveFault : public ::testing::TestWithParam<std::pair<Op, int>> {};

TEST_P(SaveFault, FailsCleanlyIsCountedAndTierRecovers) {
  Fixture f;
  auto [op, err] = GetParam();
  f.io->fail_op = static_cast<int>(op);
  f.io->fail_errno = err;
  auto meta = testing::make_meta(testing::seq_tokens(32));
  auto payload = testing::random_bytes(100000, 1);
  auto r = f.cache->save(Tier::kDisk, meta, payload);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(testing::counter(*f.cache, Counter::kSaveErrors), 1u);
  EXPECT_EQ(testing::counter(*f.cache, Counter::kSavesCold), 0u);
  EXPECT_FALSE(f.cache->lookup_exact(make_key(meta.ns, meta.tokens)));
  EXPECT_FALSE(CacheTestPeer::impl(*f.cache).meta.reserved(make_key(meta.ns, meta.tokens)));
  EXPECT_TRUE(f.no_tmp_files());
  EXPECT_TRUE(f.cache->tier_degraded(Tier::kDisk));
  // Other tiers are untouched by the disk tier's trouble.
  EXPECT_FALSE(f.cache->tier_degraded(Tier::kRamFile));
  EXPECT_TRUE(f.cache->save(Tier::kRam, meta, payload).ok());
  // Heal the device, rescan, and the tier works again.
  f.io->fail_op = -1;
  ASSERT_TRUE(f.cache->rescan_tier(Tier::kDisk).ok());
  EXPECT_FALSE(f.cache->tier_degraded(Tier::kDisk));
  auto meta2 = testing::make_meta(testing::seq_tokens(33));
  ASSERT_TRUE(f.cache->save(Tier::kDisk, meta2, payload).ok());
  EXPECT_EQ(*f.cache->load(make_key(meta2.ns, meta2.tokens)), payload);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, SaveFault,
    ::testing::Values(std::make_pair(Op::kWrite, ENOSPC), std::make_pair(Op::kWrite, EIO),
                      std::make_pair(Op::kFdatasync, EIO), std::make_pair(Op::kOpen, EIO),
                      std::make_pair(Op::kLink, EIO), std::make_pair(Op::kFsync, EIO)));

TEST(Fault, ShortWritesAreRetriedNotTruncated) {
  Fixture f;
  f.io->short_writes = true;
  auto meta = testing::make_meta(testing::seq_tokens(64));
  auto payload = testing::random_bytes(300000, 2);
  auto r = f.cache->save(Tier::kDisk, meta, payload);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(*f.cache->load(*r), payload);
}

TEST(Fault, ReadErrorIsACountedMissAndDegrades) {
  Fixture f;
  auto meta = testing::make_meta(testing::seq_tokens(64));
  auto payload = testing::random_bytes(50000, 3);
  CacheKey key = *f.cache->save(Tier::kDisk, meta, payload);
  f.io->fail_op = static_cast<int>(Op::kRead);
  auto r = f.cache->load(key);
  EXPECT_FALSE(r.ok());
  EXPECT_GE(testing::counter(*f.cache, Counter::kLoadErrors), 1u);
  EXPECT_FALSE(f.cache->lookup_exact(key));  // misses until the tier recovers
  f.io->fail_op = -1;
  ASSERT_TRUE(f.cache->rescan_tier(Tier::kDisk).ok());
  EXPECT_EQ(*f.cache->load(key), payload);
}

TEST(Fault, BitFlippedPayloadIsNeverReturned) {
  Fixture f;
  auto meta = testing::make_meta(testing::seq_tokens(64));
  auto payload = testing::random_bytes(50000, 4);
  CacheKey key = *f.cache->save(Tier::kDisk, meta, payload);
  std::string path = f.cache->lookup_exact(key)->location;
  flip_payload_byte(path, payload, 100);
  auto r = f.cache->load(key);
  EXPECT_EQ(r.status().code(), ErrorCode::kDataLoss);
  EXPECT_EQ(testing::counter(*f.cache, Counter::kCorruptFiles), 1u);
  EXPECT_FALSE(f.cache->lookup_exact(key));
  EXPECT_FALSE(fs::exists(path));  // corrupt rows are removed
}

// The scatter read (a restore straight into KV runs) checks the CRC like load().
TEST(Fault, BitFlippedPayloadFailsTheScatterRead) {
  Fixture f;
  auto meta = testing::make_meta(testing::seq_tokens(64));
  auto payload = testing::random_bytes(50000, 6);
  CacheKey key = *f.cache->save(Tier::kDisk, meta, payload);
  std::string path = f.cache->lookup_exact(key)->location;
  flip_payload_byte(path, payload, 30000);
  auto lease = f.cache->checkout(key);
  ASSERT_TRUE(lease.ok());
  std::vector<uint8_t> a(20000), b(30000);
  const std::span<uint8_t> parts[2] = {a, b};
  EXPECT_EQ(lease->read_payload(std::span<const std::span<uint8_t>>(parts)).code(),
            ErrorCode::kDataLoss);
  EXPECT_EQ(testing::counter(*f.cache, Counter::kCorruptFiles), 1u);
  EXPECT_FALSE(f.cache->lookup_exact(key));
}

// A ram_file row of 1 MiB or more without a kept mapping (one found by the scan) is
// copied out of a mapping of its file (the fused copy + CRC) or through pread, as
// configured or (auto) as measured: read whole and
// scattered over unaligned pieces it gives the saved bytes on every path; one flipped
// byte is a miss, counted and dropped.
class RamFileCopyPath : public ::testing::TestWithParam<CacheConfig::RamFileRead> {};

TEST_P(RamFileCopyPath, LargeRowReadsExactlyAndCatchesAFlip) {
  using Mode = CacheConfig::RamFileRead;
  Fixture f(GetParam());
  auto payload = testing::random_bytes((3u << 20) + 777, 8);
  CacheKey key = f.save_row(Tier::kRamFile, payload);
  f.restart();  // a kept mapping would take every read (tests/cache/kept_mapping_test.cpp)
  // Enough reads for the auto mode's probes of both paths and some choices after them.
  const int reads = 2 * static_cast<int>(CopyPathChooser::kProbeReads) + 2;
  for (int i = 0; i < reads; ++i) {
    auto lease = f.cache->checkout(key);
    ASSERT_TRUE(lease.ok());
    std::vector<uint8_t> a(1000003), b(payload.size() - 1000003);
    const std::span<uint8_t> parts[2] = {a, b};
    ASSERT_TRUE(lease->read_payload(std::span<const std::span<uint8_t>>(parts)).ok());
    EXPECT_TRUE(std::equal(a.begin(), a.end(), payload.begin())) << "read " << i;
    EXPECT_TRUE(std::equal(b.begin(), b.end(), payload.begin() + 1000003)) << "read " << i;
    std::vector<uint8_t> whole(payload.size());
    ASSERT_TRUE(lease->read_payload(whole).ok());  // the same lease again
    EXPECT_EQ(whole, payload) << "read " << i;
  }
  const CopyPathChooser& chooser = CacheTestPeer::impl(*f.cache).ram_file_copy;
  switch (GetParam()) {
    case Mode::kMapped:
      EXPECT_EQ(f.io->maps.load(), 2 * reads);  // each read maps (and unmaps) the file
      EXPECT_GT(chooser.ns_per_byte(CopyPath::kMapped), 0);
      EXPECT_EQ(chooser.ns_per_byte(CopyPath::kPread), 0);
      break;
    case Mode::kPread:
      EXPECT_EQ(f.io->maps.load(), 0);
      EXPECT_EQ(chooser.ns_per_byte(CopyPath::kMapped), 0);
      EXPECT_GT(chooser.ns_per_byte(CopyPath::kPread), 0);
      break;
    case Mode::kAuto:  // both measured, each by at least its probe reads
      EXPECT_GE(f.io->maps.load(), static_cast<int>(CopyPathChooser::kProbeReads));
      EXPECT_GT(chooser.ns_per_byte(CopyPath::kMapped), 0);
      EXPECT_GT(chooser.ns_per_byte(CopyPath::kPread), 0);
      break;
  }
  std::string path = f.cache->lookup_exact(key)->location;
  flip_payload_byte(path, payload, (2u << 20) + 5);
  auto r = f.cache->load(key);
  EXPECT_EQ(r.status().code(), ErrorCode::kDataLoss);
  EXPECT_EQ(testing::counter(*f.cache, Counter::kCorruptFiles), 1u);
  EXPECT_FALSE(f.cache->lookup_exact(key));
  EXPECT_FALSE(fs::exists(path));
}

INSTANTIATE_TEST_SUITE_P(Paths, RamFileCopyPath,
                         ::testing::Values(CacheConfig::RamFileRead::kMapped,
                                           CacheConfig::RamFileRead::kPread,
                                           CacheConfig::RamFileRead::kAuto),
                         [](const auto& info) {
                           switch (info.param) {
                             case CacheConfig::RamFileRead::kMapped:
                               return "Mapped";
                             case CacheConfig::RamFileRead::kPread:
                               return "Pread";
                             default:
                               return "Auto";
                           }
                         });

// A file row of 8 MiB or more read through pread is read as two halves by two threads,
// each checked apart and the CRCs combined: exact bytes over pieces that straddle the
// halves' border (disk, page cache warm; ram_file, pread forced); a flipped byte in the
// second half is a counted, dropped miss; a read error only the helper thread meets is
// the read's error.
TEST(Fault, LargeFileRowIsReadInTwoHalvesAndEachIsChecked) {
  for (Tier tier : {Tier::kDisk, Tier::kRamFile}) {
    SCOPED_TRACE(tier_name(tier));
    Fixture f(CacheConfig::RamFileRead::kPread);
    auto payload = testing::random_bytes((12u << 20) + 4321, 11);
    CacheKey key = f.save_row(tier, payload);
    {
      auto lease = f.cache->checkout(key);
      ASSERT_TRUE(lease.ok());
      const size_t cut = payload.size() / 2 - 1000;  // the last piece of the first half
      std::vector<uint8_t> a(cut), b(5000), c(payload.size() - cut - 5000);
      const std::span<uint8_t> parts[3] = {a, b, c};
      ASSERT_TRUE(lease->read_payload(std::span<const std::span<uint8_t>>(parts)).ok());
      std::vector<uint8_t> joined(a);
      joined.insert(joined.end(), b.begin(), b.end());
      joined.insert(joined.end(), c.begin(), c.end());
      EXPECT_EQ(joined, payload);
    }
    const std::string path = f.cache->lookup_exact(key)->location;
    const uint64_t file_size = fs::file_size(path);
    // A read error past three quarters of the file: the helper thread's half.
    f.io->fail_reads_from = static_cast<int64_t>(file_size - payload.size() / 4);
    {
      auto lease = f.cache->checkout(key);
      ASSERT_TRUE(lease.ok());
      std::vector<uint8_t> out(payload.size());
      EXPECT_EQ(lease->read_payload(out).code(), ErrorCode::kIo);
    }
    EXPECT_FALSE(f.cache->lookup_exact(key)) << "an unreadable row is a miss";
    f.io->fail_reads_from = -1;
    // The device recovered: a rescan brings the row back, whole.
    ASSERT_TRUE(f.cache->rescan_tier(tier).ok());
    ASSERT_TRUE(f.cache->lookup_exact(key));
    EXPECT_EQ(*f.cache->load(key), payload);
    flip_payload_byte(path, payload, 1000);  // in the second half
    auto r = f.cache->load(key);
    EXPECT_EQ(r.status().code(), ErrorCode::kDataLoss);
    EXPECT_FALSE(f.cache->lookup_exact(key));
    EXPECT_FALSE(fs::exists(path));
  }
}

// A read out of the mapping a view() made reuses it (no second mapping) and teaches the
// chooser nothing: it paid for no mapping of its own.
TEST(Fault, ReadAfterViewReusesTheMappingAndRecordsNothing) {
  Fixture f(CacheConfig::RamFileRead::kMapped);
  auto payload = testing::random_bytes((2u << 20) + 3, 10);
  CacheKey key = f.save_row(Tier::kRamFile, payload);
  f.restart();
  auto lease = f.cache->checkout(key);
  ASSERT_TRUE(lease.ok());
  auto view = lease->view();
  ASSERT_TRUE(view.ok()) << view.status().to_string();
  EXPECT_TRUE(std::equal(view->begin(), view->end(), payload.begin()));
  std::vector<uint8_t> out(payload.size());
  ASSERT_TRUE(lease->read_payload(out).ok());
  EXPECT_EQ(out, payload);
  EXPECT_EQ(f.io->maps.load(), 1);
  EXPECT_EQ(CacheTestPeer::impl(*f.cache).ram_file_copy.ns_per_byte(CopyPath::kMapped), 0);
}

// A mapping that cannot be made falls back to pread (here failing too: the read error
// path, the tier degraded, the row a miss).
TEST(Fault, FailedMappingFallsBackToPread) {
  Fixture f;
  auto payload = testing::random_bytes((2u << 20) + 1, 9);
  CacheKey key = f.save_row(Tier::kRamFile, payload);
  f.restart();
  auto lease = f.cache->checkout(key);
  ASSERT_TRUE(lease.ok());
  f.io->fail_op = static_cast<int>(Op::kRead);
  std::vector<uint8_t> out(payload.size());
  EXPECT_EQ(lease->read_payload(out).code(), ErrorCode::kIo);
  EXPECT_GE(testing::counter(*f.cache, Counter::kLoadErrors), 1u);
}

TEST(Fault, TruncatedFileIsAMiss) {
  Fixture f;
  auto meta = testing::make_meta(testing::seq_tokens(64));
  auto payload = testing::random_bytes(50000, 5);
  CacheKey key = *f.cache->save(Tier::kDisk, meta, payload);
  std::string path = f.cache->lookup_exact(key)->location;
  fs::resize_file(path, fs::file_size(path) - 1000);
  EXPECT_FALSE(f.cache->checkout(key).ok());
  EXPECT_FALSE(f.cache->lookup_exact(key));
  EXPECT_GE(testing::counter(*f.cache, Counter::kLoadErrors), 1u);
  EXPECT_FALSE(fs::exists(path));  // dropped as corrupt
  // And a restart scan refuses a truncated file too.
  CacheKey key2 = *f.cache->save(Tier::kDisk, testing::make_meta(testing::seq_tokens(65)), payload);
  fs::resize_file(f.cache->lookup_exact(key2)->location, 100);
  uint64_t bad = 0;
  auto scanned = CacheTestPeer::impl(*f.cache).files[2]->scan(nullptr, &bad);
  ASSERT_TRUE(scanned.ok());
  EXPECT_EQ(scanned->size(), 0u);
  EXPECT_EQ(bad, 1u);
}

TEST(Fault, DirectoryRemovedDegradesThenRecovers) {
  Fixture f;
  auto payload = testing::random_bytes(1000, 6);
  ASSERT_TRUE(f.cache->save(Tier::kDisk, testing::make_meta(testing::seq_tokens(8)), payload).ok());
  fs::remove_all(f.dir.sub("disk"));
  auto r = f.cache->save(Tier::kDisk, testing::make_meta(testing::seq_tokens(9)), payload);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(f.cache->tier_degraded(Tier::kDisk));
  ASSERT_TRUE(f.cache->rescan_tier(Tier::kDisk).ok());  // recreates the directory
  EXPECT_EQ(f.cache->row_count(), 0u);                  // the vanished row is gone
  EXPECT_TRUE(f.cache->save(Tier::kDisk, testing::make_meta(testing::seq_tokens(9)), payload).ok());
}

}  // namespace
}  // namespace hearth::cache
