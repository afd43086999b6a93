// Property tests for the reservation state machine: a model-based test of the
// meta index (reserve / post-link / publish / cancel / TTL reaping / inserts /
// evictions / pins against a plain model), and concurrent writers of one key
// through the whole save pipeline on every tier.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <atomic>
#include <filesystem>
#include <latch>
#include <map>
#include <thread>

#include "cache/cache_impl.h"
#include "test_util.h"
#include "testing/cache_test_peer.h"

namespace hearth::cache {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr int kKeys = 4;
constexpr Tier kTiers[] = {Tier::kRam, Tier::kRamFile, Tier::kDisk};

// Key i is the key of tokens 1..i+1, so the keys' token lists are prefixes of
// one another and the radix index has something to choose between.
std::vector<Token> key_tokens(int i) {
  return testing::seq_tokens(static_cast<size_t>(i) + 1);
}
CacheKey key_of(int i) {
  return make_key(testing::test_ns(), key_tokens(i));
}

RowPtr make_row(int k, Tier tier, uint64_t size) {
  auto row = std::make_shared<Row>();
  row->key = key_of(k);
  row->tier = tier;
  row->size = size;
  row->location = "model";
  row->ns_id = testing::test_ns().id();
  row->tokens = std::make_shared<const std::vector<Token>>(key_tokens(k));
  return row;
}

struct ModelReservation {
  uint64_t token;
  Tier tier;
  uint64_t bytes;
  bool post_link = false;
  bool expired = false;  // reserved with a zero TTL: the next take_expired reaps it
};

struct ModelRow {
  Tier tier;
  uint64_t size;
  RowPtr row;
};

struct Model {
  std::map<int, ModelReservation> res;
  std::map<int, ModelRow> rows;
  std::vector<uint64_t> issued;  // every token handed out, for stale-token calls

  uint64_t bytes(Tier t) const {
    uint64_t b = 0;
    for (const auto& [k, r] : res) b += r.tier == t ? r.bytes : 0;
    for (const auto& [k, r] : rows) b += r.tier == t ? r.size : 0;
    return b;
  }
  uint64_t row_count(Tier t) const {
    uint64_t n = 0;
    for (const auto& [k, r] : rows) n += r.tier == t;
    return n;
  }
};

// Either the key's live token or a token that is not (one issued earlier, to
// this key or another, or one never issued).
uint64_t pick_token(const Model& m, int k) {
  auto live = m.res.find(k);
  bool use_live = live != m.res.end() && *rc::gen::arbitrary<bool>();
  if (use_live) return live->second.token;
  if (!m.issued.empty() && *rc::gen::arbitrary<bool>()) {
    uint64_t t = *rc::gen::elementOf(m.issued);
    if (live == m.res.end() || t != live->second.token) return t;
  }
  return 1u << 30;
}

// Every observable of the index against the model.
void check_against_model(MetaIndex& meta, const Model& m) {
  SnapshotPtr snap = meta.snapshot();
  RC_ASSERT(snap->rows.size() == m.rows.size());
  for (int k = 0; k < kKeys; ++k) {
    CacheKey key = key_of(k);
    auto row = m.rows.find(k);
    auto res = m.res.find(k);
    // A key is absent, reserved or published: never two of these.
    RC_ASSERT(!(row != m.rows.end() && res != m.res.end()));
    RowPtr found = meta.find(key);
    RC_ASSERT((found != nullptr) == (row != m.rows.end()));
    if (found) {
      RC_ASSERT(found == row->second.row);
      RC_ASSERT(found->size == row->second.size);
    }
    RC_ASSERT(meta.reserved(key) == (res != m.res.end()));
    if (res != m.res.end()) RC_ASSERT(meta.check(key, res->second.token));
    for (Tier t : kTiers) {
      bool claimed = (row != m.rows.end() && row->second.tier == t) ||
                     (res != m.res.end() && res->second.tier == t && res->second.post_link);
      RC_ASSERT(meta.claims_path(key, t) == claimed);
    }
    // A resume lookup with a deadline already past answers from what is there.
    RowPtr waited = meta.wait_published(key, std::chrono::steady_clock::now());
    RC_ASSERT(waited == found);
  }
  for (Tier t : kTiers) {
    RC_ASSERT(meta.tier_bytes(t) == m.bytes(t));
    RC_ASSERT(meta.tier_rows(t) == m.row_count(t));
  }
  // The LRU offers exactly the unpinned rows.
  size_t unpinned = 0;
  for (const auto& [k, r] : m.rows) unpinned += r.row->refcount() == 0;
  RC_ASSERT(meta.lru_candidates(0x7).size() == unpinned);
  // The radix index: the longest published key is the best prefix of a long prompt.
  int longest = -1;
  for (const auto& [k, r] : m.rows) longest = std::max(longest, k);
  auto root = snap->radix.find(testing::test_ns().id());
  if (longest < 0) {
    RC_ASSERT(root == snap->radix.end());
  } else {
    RC_ASSERT(root != snap->radix.end());
    auto hit = radix_longest_prefix(root->second, key_tokens(kKeys + 3));
    RC_ASSERT(hit.has_value());
    RC_ASSERT(hit->depth == static_cast<size_t>(longest) + 1);
    RC_ASSERT(hit->key == key_of(longest));
  }
}

enum Op {
  kReserve,
  kMarkPostLink,
  kPublish,
  kCancel,
  kTakeExpired,
  kInsert,
  kEvict,
  kDrop,
  kPin,
  kUnpin,
  kOpCount
};

RC_GTEST_PROP(ReservationProp, MetaIndexFollowsTheModel, ()) {
  MetaIndex meta;
  Model m;
  std::vector<RowPtr> pins;  // rows this test holds checked out
  const int steps = *rc::gen::inRange(1, 80);
  for (int step = 0; step < steps; ++step) {
    const int k = *rc::gen::inRange(0, kKeys);
    const CacheKey key = key_of(k);
    switch (*rc::gen::inRange(0, static_cast<int>(kOpCount))) {
      case kReserve: {
        Tier tier = *rc::gen::element(Tier::kRam, Tier::kRamFile, Tier::kDisk);
        uint64_t bytes = *rc::gen::inRange<uint64_t>(1, 1000);
        bool expire = *rc::gen::arbitrary<bool>();
        auto r = meta.reserve(key, tier, bytes, expire ? 0 : 600000);
        bool free = !m.rows.count(k) && !m.res.count(k);
        RC_ASSERT(r.ok() == free);
        if (!r.ok()) {
          RC_ASSERT(r.status().code() == ErrorCode::kAlreadyExists);
          break;
        }
        for (uint64_t t : m.issued) RC_ASSERT(*r > t);  // fresh, monotonic
        m.issued.push_back(*r);
        m.res[k] = {*r, tier, bytes, false, expire};
        break;
      }
      case kMarkPostLink: {
        uint64_t token = pick_token(m, k);
        bool live = m.res.count(k) && m.res[k].token == token;
        RC_ASSERT(meta.mark_post_link(key, token, "path-" + std::to_string(k)) == live);
        if (live) m.res[k].post_link = true;
        break;
      }
      case kPublish: {
        uint64_t token = pick_token(m, k);
        bool live = m.res.count(k) && m.res[k].token == token;
        Tier tier =
            live ? m.res[k].tier : *rc::gen::element(Tier::kRam, Tier::kRamFile, Tier::kDisk);
        uint64_t size = *rc::gen::inRange<uint64_t>(1, 1000);
        RowPtr row = make_row(k, tier, size);
        RC_ASSERT(meta.publish(key, token, row) == live);
        if (live) {
          m.res.erase(k);
          m.rows[k] = {tier, size, row};
        }
        break;
      }
      case kCancel: {
        uint64_t token = pick_token(m, k);
        meta.cancel(key, token);
        if (m.res.count(k) && m.res[k].token == token) m.res.erase(k);
        break;
      }
      case kTakeExpired: {
        auto reaped = meta.take_expired();
        std::map<int, ModelReservation> expected;
        for (const auto& [mk, r] : m.res) {
          if (r.expired) expected[mk] = r;
        }
        RC_ASSERT(reaped.size() == expected.size());
        for (const auto& [rk, r] : reaped) {
          int mk = -1;
          for (int i = 0; i < kKeys; ++i) mk = key_of(i) == rk ? i : mk;
          RC_ASSERT(expected.count(mk) == 1u);
          RC_ASSERT(r.token == expected[mk].token);
          RC_ASSERT((r.stage == ReserveStage::kPostLink) == expected[mk].post_link);
          if (expected[mk].post_link) RC_ASSERT(r.path == "path-" + std::to_string(mk));
          m.res.erase(mk);
        }
        break;
      }
      case kInsert: {
        Tier tier = *rc::gen::element(Tier::kRam, Tier::kRamFile, Tier::kDisk);
        uint64_t size = *rc::gen::inRange<uint64_t>(1, 1000);
        RowPtr row = make_row(k, tier, size);
        bool free = !m.rows.count(k) && !m.res.count(k);
        RC_ASSERT(meta.insert_available(row) == free);
        if (free) m.rows[k] = {tier, size, row};
        break;
      }
      case kEvict: {
        if (!m.rows.count(k)) break;
        RowPtr row = m.rows[k].row;
        bool pinned = row->refcount() > 0;
        auto removed = meta.remove_rows({row});
        RC_ASSERT(removed.size() == (pinned ? 0u : 1u));
        if (!pinned) m.rows.erase(k);
        break;
      }
      case kDrop: {
        RowPtr expected = m.rows.count(k) ? m.rows[k].row : nullptr;
        RC_ASSERT(meta.drop(key) == expected);
        if (expected) {
          RC_ASSERT(expected->dead());
          m.rows.erase(k);
        }
        break;
      }
      case kPin: {
        if (!m.rows.count(k)) break;
        RC_ASSERT(m.rows[k].row->try_pin());  // an indexed row is never dead
        pins.push_back(m.rows[k].row);
        break;
      }
      case kUnpin: {
        if (pins.empty()) break;
        size_t i = *rc::gen::inRange<size_t>(0, pins.size());
        pins[i]->unpin();
        pins.erase(pins.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
    check_against_model(meta, m);
  }
  // Wind down: every writer cancels, every pin is released, every row is
  // evicted; the byte and row accounts return to zero.
  for (const auto& [k, r] : m.res) meta.cancel(key_of(k), r.token);
  for (const auto& p : pins) p->unpin();
  std::vector<RowPtr> all;
  for (const auto& [k, r] : m.rows) all.push_back(r.row);
  RC_ASSERT(meta.remove_rows(all).size() == all.size());
  for (Tier t : kTiers) {
    RC_ASSERT(meta.tier_bytes(t) == 0u);
    RC_ASSERT(meta.tier_rows(t) == 0u);
  }
  RC_ASSERT(meta.reservations().empty());
  RC_ASSERT(meta.snapshot()->rows.empty());
  RC_ASSERT(meta.snapshot()->radix.empty());
}

// N writers save different payloads under one key at the same moment, through
// the whole pipeline: exactly one publishes, the rest abandon with
// already_exists, and the row is the winner's bytes and verifies.
RC_GTEST_PROP(ReservationProp, ConcurrentWritersOneKeyExactlyOnePublishes, ()) {
  const int n = *rc::gen::inRange(2, 9);
  const Tier tier = *rc::gen::element(Tier::kRam, Tier::kRamFile, Tier::kDisk);
  const size_t n_tokens = *rc::gen::inRange<size_t>(1, 300);
  const uint32_t seed = *rc::gen::arbitrary<uint32_t>();
  std::vector<std::vector<uint8_t>> payloads;
  for (int i = 0; i < n; ++i) {
    size_t size = *rc::gen::inRange<size_t>(1, 64 << 10);
    payloads.push_back(testing::random_bytes(size, seed + static_cast<uint32_t>(i)));
  }
  TempDir d;
  CacheConfig c;
  c.ram_file_dir = d.sub("shm");
  c.disk_dir = d.sub("disk");
  c.sweep_interval_ms = 0;
  c.writer_threads = 8;  // a slot for every writer: they really overlap
  auto opened = Cache::open(c);
  RC_ASSERT(opened.ok());
  Cache& cache = **opened;
  auto meta = testing::make_meta(testing::seq_tokens(n_tokens, seed % 1000));
  const CacheKey key = make_key(meta.ns, meta.tokens);

  std::vector<Result<CacheKey>> results(static_cast<size_t>(n), Internal("not run"));
  std::latch start(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      results[static_cast<size_t>(i)] = cache.save(tier, meta, payloads[static_cast<size_t>(i)]);
    });
  }
  for (auto& t : threads) t.join();

  int winner = -1;
  for (int i = 0; i < n; ++i) {
    const auto& r = results[static_cast<size_t>(i)];
    if (r.ok()) {
      RC_ASSERT(winner == -1);
      RC_ASSERT(*r == key);
      winner = i;
    } else {
      RC_ASSERT(r.status().code() == ErrorCode::kAlreadyExists);
    }
  }
  RC_ASSERT(winner >= 0);
  RC_ASSERT(testing::counter(cache, Counter::kDuplicateDropped) == static_cast<uint64_t>(n - 1));
  RC_ASSERT(testing::counter(cache, Counter::kSaveErrors) == 0u);
  RC_ASSERT(cache.row_count() == 1u);
  auto row = cache.lookup_exact(key);
  RC_ASSERT(row.has_value());
  RC_ASSERT(row->tier == tier);
  auto loaded = cache.load(key);
  RC_ASSERT(loaded.ok());
  RC_ASSERT(*loaded == payloads[static_cast<size_t>(winner)]);
  Cache::Impl& impl = CacheTestPeer::impl(cache);
  RC_ASSERT(!impl.meta.reserved(key));
  RC_ASSERT(impl.meta.tier_bytes(tier) == row->size);
  if (FileTier* ft = impl.file_tier(tier)) {
    RC_ASSERT(ft->verify(row->location, key).ok());
    // One published file; no abandoned writer left a temp file behind.
    size_t files = 0;
    for (const auto& e : fs::directory_iterator(ft->dir())) {
      if (e.path().filename() == FileTier::kMarkerName) continue;
      RC_ASSERT(e.path().extension() == ".kvc");
      ++files;
    }
    RC_ASSERT(files == 1u);
  }
}

}  // namespace
}  // namespace hearth::cache
