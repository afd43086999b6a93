// A damaged row must never change what a restore sees: every single-byte flip, small
// overwrite or truncation of a row file either reads back exactly what was saved or
// is a miss, counted as corrupt. Run over every offset of a small row, on both file
// tiers, through both ways a damaged file reaches the cache: under a published row
// (checkout) and at start-up (scan).
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>

#include "hearth/cache/cache.h"
#include "test_util.h"
#include "testing/file_bytes.h"

namespace hearth::cache {
namespace {

using testing::TempDir;

using hearth::testing::read_file_bytes;
using hearth::testing::write_file_bytes;

struct Saved {
  KvcBuildMeta meta;
  std::vector<uint8_t> payload;
  CacheKey key{};
};

// What a restore would use from a row, compared with what was saved. Returns "" when
// the row reads back exactly, else what differs.
std::string differs(Cache& cache, const Saved& s) {
  auto lease = cache.checkout(s.key);
  if (!lease.ok()) return "miss: " + lease.status().to_string();
  const KvcInfo& info = lease->info();
  if (info.tokens != s.meta.tokens) return "tokens differ";
  if (info.ns != s.meta.ns) return "namespace differs";
  if (info.context_size != s.meta.context_size) return "context size differs";
  const KvcTlv* logits = info.find_tlv(kTagLogits);
  if (!logits || logits->value != s.meta.extra_tlvs[0].value) return "logits differ";
  std::vector<uint8_t> payload(lease->payload_size());
  Status st = lease->read_payload(payload);
  if (!st.ok()) return "miss: " + st.to_string();
  if (payload != s.payload) return "payload differs";
  return "";
}

class RowDamage : public ::testing::TestWithParam<Tier> {
 protected:
  void SetUp() override {
    cfg_.ram_file_dir = dir_.sub("shm");
    cfg_.disk_dir = dir_.sub("disk");
    cfg_.sweep_interval_ms = 0;
    saved_.meta = testing::make_meta(testing::seq_tokens(9));
    std::vector<uint8_t> logits(4 * 8);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<uint8_t>(i * 37 + 1);
    saved_.meta.extra_tlvs.push_back({kTagLogits, logits});
    saved_.payload = testing::random_bytes(96, 7);
    auto c = Cache::open(cfg_);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    cache_ = std::move(c).value();
    auto key = cache_->save(GetParam(), saved_.meta, saved_.payload);
    ASSERT_TRUE(key.ok()) << key.status().to_string();
    saved_.key = *key;
    path_ = cache_->lookup_exact(saved_.key)->location;
    original_ = read_file_bytes(path_);
    ASSERT_FALSE(original_.empty());
  }

  // Puts the undamaged row back under the index (the cache may have dropped it).
  void restore() {
    write_file_bytes(path_, original_);
    ASSERT_TRUE(cache_->rescan_tier(GetParam()).ok());
    ASSERT_EQ(differs(*cache_, saved_), "");
  }

  // One damaged file, seen through a published row and through a fresh start.
  void check(const std::vector<uint8_t>& damaged, const std::string& what) {
    write_file_bytes(path_, damaged);
    const uint64_t corrupt_before = testing::counter(*cache_, Counter::kCorruptFiles);
    const uint64_t errors_before = testing::counter(*cache_, Counter::kLoadErrors);
    std::string d = differs(*cache_, saved_);
    if (!d.empty()) {
      EXPECT_EQ(d.rfind("miss:", 0), 0u) << what << ": " << d;
      EXPECT_GT(testing::counter(*cache_, Counter::kLoadErrors), errors_before) << what;
      EXPECT_GT(testing::counter(*cache_, Counter::kCorruptFiles), corrupt_before) << what;
      EXPECT_FALSE(cache_->lookup_exact(saved_.key)) << what << ": a corrupt row stays listed";
      ++misses_;
    }
    restore();

    write_file_bytes(path_, damaged);
    cache_.reset();
    auto c = Cache::open(cfg_);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    cache_ = std::move(c).value();
    if (cache_->lookup_exact(saved_.key)) {
      std::string after_scan = differs(*cache_, saved_);
      EXPECT_TRUE(after_scan.empty() || after_scan.rfind("miss:", 0) == 0)
          << what << " (after a restart): " << after_scan;
    }
    restore();
  }

  TempDir dir_;
  CacheConfig cfg_;
  std::unique_ptr<Cache> cache_;
  Saved saved_;
  std::string path_;
  std::vector<uint8_t> original_;
  size_t misses_ = 0;
};

TEST_P(RowDamage, EveryFlipOverwriteAndTruncationReadsBackExactlyOrMisses) {
  const size_t n = original_.size();
  for (size_t at = 0; at < n; ++at) {
    auto flipped = original_;
    flipped[at] ^= 0xFF;
    check(flipped, "flip at " + std::to_string(at));
    auto overwritten = original_;
    for (size_t k = at; k < std::min(n, at + 4); ++k) overwritten[k] = 0x7F;
    if (overwritten != original_) check(overwritten, "0x7f x4 at " + std::to_string(at));
    check(std::vector<uint8_t>(original_.begin(), original_.begin() + static_cast<ptrdiff_t>(at)),
          "truncated to " + std::to_string(at));
  }
  // Only the in-place fields (hit_count, last_used_time: 12 bytes) may be damaged
  // without a miss; the rest of the row must have been detected.
  EXPECT_GE(misses_, 3 * n - 40) << "row of " << n << " bytes";
}

INSTANTIATE_TEST_SUITE_P(FileTiers, RowDamage, ::testing::Values(Tier::kRamFile, Tier::kDisk),
                         [](const auto& info) { return std::string(tier_name(info.param)); });

}  // namespace
}  // namespace hearth::cache
