// Delta rows (KVC version 2): a save that continues a row of its tier stores only the
// positions after it; a restore walks the chain parents first, verifying every link,
// and yields the bytes of the whole row; a broken link is a miss; eviction never
// removes a parent a live child needs.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "cache/cache_impl.h"
#include "cache/crc32c.h"
#include "delta_util.h"
#include "testing/cache_test_peer.h"

namespace hearth::cache {
namespace {

namespace fs = std::filesystem;
using testing::layout_meta;
using testing::layout_payload;
using testing::seq_tokens;

CacheConfig delta_config(const testing::TempDir& tmp, uint32_t depth) {
  CacheConfig c;
  c.ram_file_dir = tmp.sub("ramfile");
  c.disk_dir = tmp.sub("disk");
  c.sweep_interval_ms = 0;
  c.max_delta_depth = depth;
  return c;
}

std::map<CacheKey, RowInfo> rows_by_key(const Cache& c) {
  std::map<CacheKey, RowInfo> out;
  for (const RowInfo& r : c.dump()) out[r.key] = r;
  return out;
}

// Saves the prefixes 16, 32, ... n of one conversation, each a continuation of the last.
std::vector<CacheKey> save_chain(Cache& c, Tier tier, size_t n, Token start = 1) {
  constexpr size_t step = 16;
  std::vector<CacheKey> keys;
  const auto all = seq_tokens(n, start);
  for (size_t len = step; len <= n; len += step) {
    std::vector<Token> t(all.begin(), all.begin() + static_cast<ptrdiff_t>(len));
    auto k = c.save(tier, layout_meta(t), layout_payload(t));
    EXPECT_TRUE(k.ok()) << k.status().to_string();
    if (k.ok()) keys.push_back(*k);
  }
  return keys;
}

class DeltaTiers : public ::testing::TestWithParam<Tier> {};

TEST_P(DeltaTiers, ChainRestoresTheWholeRowBitForBit) {
  testing::TempDir tmp;
  auto c = Cache::open(delta_config(tmp, 8));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto keys = save_chain(**c, GetParam(), 64);
  ASSERT_EQ(keys.size(), 4u);
  auto rows = rows_by_key(**c);
  uint64_t stored = 0, whole = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const RowInfo& r = rows.at(keys[i]);
    EXPECT_EQ(r.delta_depth, i) << "row " << i;
    // Each link's payload holds only its own 16 positions.
    EXPECT_EQ(r.payload_bytes, testing::kDeltaGroups * 16u * testing::kDeltaBpp);
    stored += r.payload_bytes;
    whole += testing::kDeltaGroups * 16u * (i + 1) * testing::kDeltaBpp;
  }
  EXPECT_EQ(testing::counter(**c, Counter::kDeltaSaves), 3u);
  EXPECT_EQ(testing::counter(**c, Counter::kDeltaBytesSaved), whole - stored);
  // The parents are pinned once by their child; no reader holds anything.
  EXPECT_EQ(rows.at(keys[0]).refcount, 1u);
  EXPECT_EQ(rows.at(keys[3]).refcount, 0u);

  const auto tokens = seq_tokens(64);
  for (size_t i = 0; i < keys.size(); ++i) {
    std::vector<Token> t(tokens.begin(), tokens.begin() + static_cast<ptrdiff_t>(16 * (i + 1)));
    const auto expected = layout_payload(t);
    KvcInfo info;
    auto loaded = (*c)->load(keys[i], &info);
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
    EXPECT_EQ(*loaded, expected) << "row " << i;
    EXPECT_EQ(info.tokens, t);
    // Scattered into uneven buffers, and viewed.
    auto lease = (*c)->checkout(keys[i]);
    ASSERT_TRUE(lease.ok());
    ASSERT_EQ(lease->payload_size(), expected.size());
    std::vector<uint8_t> a(expected.size() / 3 + 7), b(expected.size() - a.size());
    const std::span<uint8_t> parts[2] = {a, b};
    ASSERT_TRUE(lease->read_payload(std::span<const std::span<uint8_t>>(parts)).ok());
    a.insert(a.end(), b.begin(), b.end());
    EXPECT_EQ(a, expected);
    auto view = lease->view();
    ASSERT_TRUE(view.ok());
    EXPECT_TRUE(std::equal(view->begin(), view->end(), expected.begin(), expected.end()));
  }
}

TEST_P(DeltaTiers, DeltasOffOrOpaquePayloadsSaveWholeRows) {
  testing::TempDir tmp;
  auto off = Cache::open(delta_config(tmp, 0));
  ASSERT_TRUE(off.ok());
  for (const RowInfo& r : [&] {
         save_chain(**off, GetParam(), 48);
         return (*off)->dump();
       }()) {
    EXPECT_EQ(r.delta_depth, 0u);
    EXPECT_EQ(r.payload_bytes, testing::kDeltaGroups * r.n_tokens * testing::kDeltaBpp);
  }
  off->reset();
  testing::TempDir tmp2;
  auto on = Cache::open(delta_config(tmp2, 8));
  ASSERT_TRUE(on.ok());
  // kv_groups 0: the payload is opaque; no delta can be cut.
  const auto t = seq_tokens(32);
  ASSERT_TRUE((*on)
                  ->save(GetParam(), testing::make_meta({t.begin(), t.begin() + 16}),
                         layout_payload({t.begin(), t.begin() + 16}))
                  .ok());
  ASSERT_TRUE((*on)->save(GetParam(), testing::make_meta(t), layout_payload(t)).ok());
  for (const RowInfo& r : (*on)->dump()) EXPECT_EQ(r.delta_depth, 0u);
}

TEST_P(DeltaTiers, DepthBoundStartsAFullRow) {
  testing::TempDir tmp;
  auto c = Cache::open(delta_config(tmp, 2));
  ASSERT_TRUE(c.ok());
  auto keys = save_chain(**c, GetParam(), 80);
  ASSERT_EQ(keys.size(), 5u);
  auto rows = rows_by_key(**c);
  const uint32_t want[] = {0, 1, 2, 0, 1};
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(rows.at(keys[i]).delta_depth, want[i]) << i;
  auto loaded = (*c)->load(keys[4]);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(*loaded, layout_payload(seq_tokens(80)));
}

TEST_P(DeltaTiers, EvictionUnderQuotaNeverLeavesAnOrphanServed) {
  testing::TempDir tmp;
  CacheConfig cfg = delta_config(tmp, 4);
  const uint64_t quota = 60 * 1024;  // a few rows: eviction runs on nearly every save
  cfg.ram_quota_bytes = quota;
  cfg.ram_file_quota_bytes = quota;
  cfg.disk_quota_bytes = quota;
  auto c = Cache::open(cfg);
  ASSERT_TRUE(c.ok());
  // Several conversations growing in turns, interleaved.
  std::map<CacheKey, std::vector<Token>> saved;
  for (int turn = 1; turn <= 8; ++turn) {
    for (Token conv = 0; conv < 4; ++conv) {
      std::vector<Token> t = seq_tokens(size_t(12 * turn), 1000 * (conv + 1));
      auto k = (*c)->save(GetParam(), layout_meta(t), layout_payload(t));
      if (k.ok()) saved[*k] = t;
      // After every save: each listed delta's parent is listed, and every listed row
      // restores to exactly its own whole payload.
      auto rows = rows_by_key(**c);
      uint64_t bytes = 0;
      for (const auto& [key, r] : rows) {
        bytes += r.size;
        ASSERT_TRUE(saved.count(key));
        auto loaded = (*c)->load(key);
        ASSERT_TRUE(loaded.ok()) << "turn " << turn << ": " << loaded.status().to_string();
        ASSERT_EQ(*loaded, layout_payload(saved[key]));
      }
      EXPECT_LE(bytes, quota);
    }
  }
  EXPECT_GT(testing::counter(**c, Counter::kEvictions), 0u);
  EXPECT_GT(testing::counter(**c, Counter::kDeltaSaves), 0u);
  EXPECT_EQ(testing::counter(**c, Counter::kDeltaBrokenChains), 0u);
  // gc empties the chains too, children before parents.
  (*c)->gc();
  EXPECT_EQ((*c)->row_count(), 0u);
}

TEST_P(DeltaTiers, CorruptParentIsAMissNeverWrongBytes) {
  testing::TempDir tmp;
  auto c = Cache::open(delta_config(tmp, 8));
  ASSERT_TRUE(c.ok());
  auto keys = save_chain(**c, GetParam(), 48);
  ASSERT_EQ(keys.size(), 3u);
  const RowInfo parent = rows_by_key(**c).at(keys[0]);
  // Flip one payload byte of the root row where it is stored.
  auto& impl = CacheTestPeer::impl(**c);
  if (GetParam() == Tier::kRam) {
    RowPtr r = impl.meta.find(keys[0]);
    const_cast<uint8_t*>(r->ram_data)[5] ^= 0x40;
    r->verified.store(false);
  } else {
    std::fstream f(parent.location, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(parent.size - 3));
    char ch = 0;
    f.read(&ch, 1);
    ch = static_cast<char>(ch ^ 0x40);
    f.seekp(static_cast<std::streamoff>(parent.size - 3));
    f.write(&ch, 1);
  }
  std::vector<uint8_t> buf(layout_payload(seq_tokens(48)).size());
  auto lease = (*c)->checkout(keys[2]);
  ASSERT_TRUE(lease.ok());  // metadata is fine; the payload read finds the damage
  EXPECT_EQ(lease->read_payload(std::span<uint8_t>(buf)).code(), ErrorCode::kDataLoss);
  EXPECT_GE(testing::counter(**c, Counter::kDeltaBrokenChains), 1u);
  // The corrupt root and every row above it have left the index: later lookups miss.
  EXPECT_FALSE((*c)->lookup_exact(keys[0]));
  EXPECT_FALSE((*c)->lookup_exact(keys[1]));
  EXPECT_FALSE((*c)->lookup_exact(keys[2]));
  EXPECT_EQ(testing::counter(**c, Counter::kDeltaOrphansDropped), 2u);
}

TEST_P(DeltaTiers, CallerCannotForgeADelta) {
  testing::TempDir tmp;
  auto c = Cache::open(delta_config(tmp, 8));
  ASSERT_TRUE(c.ok());
  auto m = layout_meta(seq_tokens(32));
  m.delta = KvcDelta{};
  auto r = (*c)->save(GetParam(), m, layout_payload(seq_tokens(32)));
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(AllTiers, DeltaTiers,
                         ::testing::Values(Tier::kRam, Tier::kRamFile, Tier::kDisk),
                         [](const auto& info) { return std::string(tier_name(info.param)); });

TEST(DeltaFiles, MissingParentFileIsAMissAndTheChildIsDropped) {
  testing::TempDir tmp;
  auto c = Cache::open(delta_config(tmp, 8));
  ASSERT_TRUE(c.ok());
  auto keys = save_chain(**c, Tier::kDisk, 32);
  ASSERT_EQ(keys.size(), 2u);
  const RowInfo parent = rows_by_key(**c).at(keys[0]);
  fs::remove(parent.location);
  auto lease = (*c)->checkout(keys[1]);
  EXPECT_FALSE(lease.ok());
  EXPECT_EQ(testing::counter(**c, Counter::kDeltaBrokenChains), 1u);
  EXPECT_FALSE((*c)->lookup_exact(keys[1]));
  EXPECT_EQ((*c)->row_count(), 0u);
}

TEST(DeltaFiles, RestartRelinksChainsAndDropsOrphans) {
  testing::TempDir tmp;
  std::vector<CacheKey> keys;
  std::string root_path;
  {
    auto c = Cache::open(delta_config(tmp, 8));
    ASSERT_TRUE(c.ok());
    keys = save_chain(**c, Tier::kDisk, 48);
    // A second conversation whose root will vanish while the cache is down.
    auto other = save_chain(**c, Tier::kRamFile, 32, /*start=*/900);
    ASSERT_EQ(other.size(), 2u);
    root_path = rows_by_key(**c).at(other[0]).location;
  }
  fs::remove(root_path);
  auto c = Cache::open(delta_config(tmp, 8));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto rows = rows_by_key(**c);
  ASSERT_EQ(rows.size(), 3u);  // the disk chain; the ram_file orphan was removed
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(rows.at(keys[i]).delta_depth, i);
  EXPECT_EQ(testing::counter(**c, Counter::kDeltaOrphansDropped), 1u);
  auto loaded = (*c)->load(keys[2]);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(*loaded, layout_payload(seq_tokens(48)));
  // The orphan's file is gone too.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(tmp.sub("ramfile"))) {
    if (e.path().extension() == ".kvc") ++files;
  }
  EXPECT_EQ(files, 0u);
}

TEST(DeltaFiles, SwappedParentFileBreaksTheChainAtRestart) {
  testing::TempDir tmp;
  std::vector<CacheKey> keys;
  std::map<CacheKey, RowInfo> rows;
  {
    auto c = Cache::open(delta_config(tmp, 8));
    ASSERT_TRUE(c.ok());
    keys = save_chain(**c, Tier::kDisk, 32);
    // An unrelated full row.
    auto t = seq_tokens(16, 500);
    ASSERT_TRUE((*c)->save(Tier::kDisk, layout_meta(t), layout_payload(t)).ok());
    rows = rows_by_key(**c);
  }
  // The chain's root file replaced by the unrelated row's bytes (a wrong parent).
  std::string other;
  for (const auto& [k, r] : rows) {
    if (k != keys[0] && k != keys[1]) other = r.location;
  }
  fs::copy_file(other, rows.at(keys[0]).location, fs::copy_options::overwrite_existing);
  auto c = Cache::open(delta_config(tmp, 8));
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE((*c)->lookup_exact(keys[0]));
  EXPECT_FALSE((*c)->lookup_exact(keys[1]));
}

// kvc_join_delta rebuilds the whole payload from the parent's whole payload (a true
// prefix's, as a model's KV is) and the delta cut from it, for any cut point.
TEST(KvcDelta, JoinInvertsCut) {
  const auto t = seq_tokens(20);
  const auto full = layout_payload(t);
  for (uint32_t pt = 1; pt < t.size(); pt += 6) {
    KvcDelta d;
    d.parent_tokens = pt;
    d.groups = testing::kDeltaGroups;
    d.depth = 1;
    d.full_payload_bytes = full.size();
    d.bytes_per_position = testing::kDeltaBpp;
    const auto parent = layout_payload(std::vector<Token>(t.begin(), t.begin() + pt));
    const auto delta = kvc_cut_delta(full, t.size(), d);
    EXPECT_EQ(kvc_join_delta(parent, delta, t.size(), d), full) << "parent_tokens " << pt;
    // Another parent (other tokens) gives other bytes: the join takes the parent's.
    const auto other = layout_payload(seq_tokens(pt, 500));
    EXPECT_NE(kvc_join_delta(other, delta, t.size(), d), full) << "parent_tokens " << pt;
  }
}

TEST(KvcDelta, VersionsAndTheDeltaTlvGoTogether) {
  const auto t = seq_tokens(32);
  const auto full = layout_payload(t);
  KvcDelta d;
  d.parent_key = make_key(testing::test_ns(), std::span<const Token>(t.data(), 16));
  d.parent_tokens = 16;
  d.groups = testing::kDeltaGroups;
  d.depth = 1;
  d.full_payload_bytes = full.size();
  d.bytes_per_position = testing::kDeltaBpp;
  const auto payload = kvc_cut_delta(full, t.size(), d);
  ASSERT_EQ(payload.size(), full.size() / 2);
  auto m = testing::make_meta(t);
  auto whole = kvc_build_prefix(m, full);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ((*whole)[3], 1);  // a full row is unchanged: version 1, readable as before
  m.delta = d;
  auto prefix = kvc_build_prefix(m, payload);
  ASSERT_TRUE(prefix.ok()) << prefix.status().to_string();
  // Version 2: a reader that knows only version 1 refuses it at the version byte.
  EXPECT_EQ((*prefix)[3], kKvcDeltaVersion);
  std::vector<uint8_t> file = *prefix;
  file.insert(file.end(), payload.begin(), payload.end());
  auto info = kvc_parse(file, make_key(m.ns, t));
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  ASSERT_TRUE(info->delta);
  EXPECT_EQ(info->delta->parent_key, d.parent_key);
  EXPECT_EQ(info->delta->parent_tokens, 16u);

  auto reseal = [](std::vector<uint8_t> f, size_t prefix_len) {
    const uint32_t crc = kvc_meta_crc(std::span<const uint8_t>(f.data(), prefix_len));
    for (int i = 0; i < 4; ++i) f[kKvcMetaCrcOffset + i] = uint8_t(crc >> (8 * i));
    return f;
  };
  // A version-1 header over a delta TLV, resealed: refused.
  auto v1 = file;
  v1[3] = kKvcVersion;
  EXPECT_EQ(kvc_parse_meta(reseal(v1, prefix->size())).status().code(), ErrorCode::kDataLoss);
  // A version-2 header without the delta TLV, resealed: refused.
  std::vector<uint8_t> v2 = *whole;
  v2.insert(v2.end(), full.begin(), full.end());
  v2[3] = kKvcDeltaVersion;
  EXPECT_EQ(kvc_parse_meta(reseal(v2, whole->size())).status().code(), ErrorCode::kDataLoss);
  // A parent key that is not the key of the row's own first tokens: refused.
  m.delta->parent_key = make_key(testing::test_ns(0x11), std::span<const Token>(t.data(), 16));
  auto wrong = kvc_build_prefix(m, payload);
  ASSERT_TRUE(wrong.ok());
  std::vector<uint8_t> wf = *wrong;
  wf.insert(wf.end(), payload.begin(), payload.end());
  EXPECT_EQ(kvc_parse_meta(wf).status().code(), ErrorCode::kDataLoss);
  // Sizes that do not add up are refused when building.
  m.delta = d;
  m.delta->full_payload_bytes += 1;
  EXPECT_FALSE(kvc_build_prefix(m, payload).ok());
}

}  // namespace
}  // namespace hearth::cache
