#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cache/cache_impl.h"
#include "test_util.h"
#include "testing/cache_test_peer.h"

namespace hearth::cache {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

CacheConfig file_config(const TempDir& d) {
  CacheConfig c;
  c.ram_file_dir = d.sub("shm");
  c.disk_dir = d.sub("disk");
  c.sweep_interval_ms = 0;
  return c;
}

std::unique_ptr<Cache> open_cache(CacheConfig c) {
  auto r = Cache::open(std::move(c));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

class CacheTiers : public ::testing::TestWithParam<Tier> {};

TEST_P(CacheTiers, SaveLookupLoadRoundTrip) {
  TempDir d;
  auto cache = open_cache(file_config(d));
  auto meta = testing::make_meta(testing::seq_tokens(100));
  auto payload = testing::random_bytes(100000, 3);
  auto key = cache->save(GetParam(), meta, payload);
  ASSERT_TRUE(key.ok()) << key.status().to_string();
  EXPECT_EQ(*key, make_key(meta.ns, meta.tokens));
  auto row = cache->lookup_exact(*key);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->tier, GetParam());
  EXPECT_EQ(row->n_tokens, 100u);
  EXPECT_EQ(row->payload_bytes, payload.size());
  KvcInfo info;
  auto loaded = cache->load(*key, &info);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(*loaded, payload);
  EXPECT_EQ(info.tokens, meta.tokens);
  {
    auto lease = cache->checkout(*key);
    ASSERT_TRUE(lease.ok());
    auto v = lease->view();
    ASSERT_TRUE(v.ok()) << v.status().to_string();
    EXPECT_TRUE(std::equal(v->begin(), v->end(), payload.begin(), payload.end()));
    EXPECT_EQ(cache->lookup_exact(*key)->refcount, 1u);
  }
  EXPECT_EQ(cache->lookup_exact(*key)->refcount, 0u);
  EXPECT_EQ(testing::counter(*cache, Counter::kSavesCold), 1u);
  EXPECT_EQ(testing::counter(*cache, Counter::kHitsExact), 3u);
  // A second save of the same key is a duplicate, not a second row.
  EXPECT_EQ(cache->save(GetParam(), meta, payload).status().code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(cache->row_count(), 1u);
}

// read_payload into several buffers (a backend's KV runs): filled in order, sizes
// must add up to the payload, and it works the same on every tier.
TEST_P(CacheTiers, ScatterReadFillsBuffersInOrder) {
  TempDir d;
  auto cache = open_cache(file_config(d));
  auto meta = testing::make_meta(testing::seq_tokens(40));
  // Larger than the lease's copy chunk, so buffers straddle chunk boundaries.
  auto payload = testing::random_bytes(1300000, 5);
  auto key = cache->save(GetParam(), meta, payload);
  ASSERT_TRUE(key.ok()) << key.status().to_string();
  auto lease = cache->checkout(*key);
  ASSERT_TRUE(lease.ok());
  std::vector<uint8_t> a(7), b(700001), c(payload.size() - 7 - 700001);
  const std::span<uint8_t> parts[3] = {a, b, c};
  ASSERT_TRUE(lease->read_payload(std::span<const std::span<uint8_t>>(parts)).ok());
  EXPECT_TRUE(std::equal(a.begin(), a.end(), payload.begin()));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), payload.begin() + 7));
  EXPECT_TRUE(std::equal(c.begin(), c.end(), payload.begin() + 7 + 700001));
  std::vector<uint8_t> short_buf(payload.size() - 1);
  const std::span<uint8_t> wrong[1] = {short_buf};
  EXPECT_EQ(lease->read_payload(std::span<const std::span<uint8_t>>(wrong)).code(),
            ErrorCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(AllTiers, CacheTiers,
                         ::testing::Values(Tier::kRam, Tier::kRamFile, Tier::kDisk),
                         [](const auto& info) { return std::string(tier_name(info.param)); });

TEST(Cache, InvalidConfigIsAnErrorAtStart) {
  CacheConfig c;
  c.policy.cold_min_tokens = 1;  // < min_tokens
  EXPECT_EQ(Cache::open(c).status().code(), ErrorCode::kInvalidArgument);
  CacheConfig s;
  s.scheduler.low_watermark = 0.9;
  EXPECT_EQ(Cache::open(s).status().code(), ErrorCode::kInvalidArgument);
}

TEST(Cache, FileTierPermissionsAndRestartPersistence) {
  TempDir d;
  CacheKey key;
  auto payload = testing::random_bytes(5000, 9);
  {
    auto cache = open_cache(file_config(d));
    key = *cache->save(Tier::kDisk, testing::make_meta(testing::seq_tokens(64)), payload);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(cache->checkout(key).ok());
  }
  struct stat st;
  ASSERT_EQ(::stat(d.sub("disk").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::string file = d.sub("disk") + "/" + to_hex(key) + ".kvc";
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Junk the restart scan must clean: a stray temp file and an invalid row.
  std::ofstream(d.sub("disk") + "/" + to_hex(key) + ".kvc.1.2.tmp") << "partial";
  CacheKey junk_key = key;
  junk_key[0] ^= 0xFF;
  std::string junk = d.sub("disk") + "/" + to_hex(junk_key) + ".kvc";
  std::ofstream(junk) << "not a kvc file";

  auto cache = open_cache(file_config(d));
  auto row = cache->lookup_exact(key);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->hits, 3u);  // persisted hit count survived the restart
  EXPECT_EQ(*cache->load(key), payload);
  EXPECT_FALSE(fs::exists(junk));
  for (const auto& e : fs::directory_iterator(d.sub("disk"))) {
    EXPECT_NE(e.path().extension(), ".tmp") << e.path();
  }
}

TEST(Cache, LongestPrefixWalkAndRadix) {
  TempDir d;
  CacheConfig c = file_config(d);
  c.policy.min_tokens = 4;
  c.policy.cold_min_tokens = 4;
  auto cache = open_cache(c);
  auto ns = testing::test_ns();
  auto toks = testing::seq_tokens(1000);
  std::vector<Token> p512(toks.begin(), toks.begin() + 512);
  std::vector<Token> p700(toks.begin(), toks.begin() + 700);
  ASSERT_TRUE(cache->save(Tier::kRam, testing::make_meta(p512), testing::random_bytes(10, 1)).ok());
  ASSERT_TRUE(
      cache->save(Tier::kDisk, testing::make_meta(p700), testing::random_bytes(10, 2)).ok());

  auto hit = cache->lookup_longest_prefix(ns, toks, 256);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->n_tokens, 512u);  // 700 is not on a stride boundary
  EXPECT_EQ(hit->row.tier, Tier::kRam);
  EXPECT_EQ(testing::counter(*cache, Counter::kHitsLongestPrefix), 1u);
  // Probes, longest first: 1000 (the whole prompt), 768, 512.
  EXPECT_EQ(testing::counter(*cache, Counter::kLongestPrefixProbes), 3u);

  // The whole prompt is also probed when it is not stride-aligned.
  auto exact = cache->lookup_longest_prefix(ns, p700, 256);
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->n_tokens, 700u);

  // Radix: token granularity, partial rows.
  std::vector<Token> diverge(toks.begin(), toks.begin() + 650);
  diverge.push_back(999999);
  auto r = cache->lookup_radix(ns, diverge);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->n_tokens, 650u);
  EXPECT_EQ(r->row.n_tokens, 700u);
  auto r2 = cache->lookup_radix(ns, toks);
  EXPECT_EQ(r2->n_tokens, 700u);
  // Other namespaces never match.
  EXPECT_FALSE(cache->lookup_radix(testing::test_ns(0x11), toks));
  EXPECT_FALSE(cache->lookup_longest_prefix(testing::test_ns(0x11), toks, 256));
  // Floor.
  EXPECT_FALSE(cache->lookup_radix(ns, diverge, 651));
}

TEST(Cache, ConcurrentWritersOneKeyExactlyOnePublishes) {
  for (Tier tier : {Tier::kRam, Tier::kDisk}) {
    TempDir d;
    CacheConfig c = file_config(d);
    c.writer_threads = 8;
    auto cache = open_cache(c);
    auto meta = testing::make_meta(testing::seq_tokens(50));
    auto payload = testing::random_bytes(200000, 4);
    std::atomic<int> ok{0}, abandoned{0}, other{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < 8; ++i) {
      ts.emplace_back([&] {
        auto r = cache->save(tier, meta, payload);
        if (r.ok()) {
          ok++;
        } else if (r.status().code() == ErrorCode::kAlreadyExists) {
          abandoned++;
        } else {
          other++;
        }
      });
    }
    for (auto& t : ts) t.join();
    EXPECT_EQ(ok.load(), 1);
    EXPECT_EQ(abandoned.load(), 7);
    EXPECT_EQ(other.load(), 0);
    EXPECT_EQ(cache->row_count(), 1u);
    EXPECT_EQ(*cache->load(make_key(meta.ns, meta.tokens)), payload);
  }
}

TEST(Cache, ResumeWaitsForInFlightSave) {
  TempDir d;
  auto cache = open_cache(file_config(d));
  auto& impl = CacheTestPeer::impl(*cache);
  auto meta = testing::make_meta(testing::seq_tokens(20), testing::test_ns(), SaveReason::kFinish);
  CacheKey key = make_key(meta.ns, meta.tokens);
  // Hold a reservation as an in-flight writer would, then publish it late.
  auto token = impl.meta.reserve(key, Tier::kRam, 100, 60000);
  ASSERT_TRUE(token.ok());
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto row = std::make_shared<Row>();
    row->key = key;
    row->tier = Tier::kRam;
    row->size = 100;
    row->location = "ram";
    row->tokens = std::make_shared<const std::vector<Token>>(meta.tokens);
    row->ns_id = meta.ns.id();
    impl.meta.publish(key, *token, row);
  });
  EXPECT_FALSE(cache->lookup_exact(key));  // not yet
  ASSERT_EQ(cache->dump().size(), 1u);
  EXPECT_EQ(cache->dump()[0].status, RowStatus::kReserved);
  auto start = std::chrono::steady_clock::now();
  auto hit = cache->lookup_exact_or_wait(key, 5000);
  auto waited = std::chrono::steady_clock::now() - start;
  writer.join();
  ASSERT_TRUE(hit);
  EXPECT_LT(waited, std::chrono::seconds(4));
  EXPECT_EQ(testing::counter(*cache, Counter::kHitsResume), 1u);
  // No reservation: returns at once with a miss.
  CacheKey absent = key;
  absent[1] ^= 1;
  EXPECT_FALSE(cache->lookup_exact_or_wait(absent, 5000));
}

TEST(Cache, ResumeWaitTimesOut) {
  TempDir d;
  auto cache = open_cache(file_config(d));
  CacheKey key{};
  key[0] = 1;
  auto token = CacheTestPeer::impl(*cache).meta.reserve(key, Tier::kRam, 1, 60000);
  ASSERT_TRUE(token.ok());
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(cache->lookup_exact_or_wait(key, 50));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(45));
}

// EEXIST: a valid file already at the final path (a writer that died after
// link but before announcing) is adopted, not skipped and not clobbered.
TEST(Publish, EexistAdoptsValidFile) {
  TempDir d;
  auto cache = open_cache(file_config(d));
  FileTier& ft = *CacheTestPeer::impl(*cache).files[2];
  auto meta = testing::make_meta(testing::seq_tokens(30));
  auto payload = testing::random_bytes(3000, 5);
  CacheKey key = make_key(meta.ns, meta.tokens);
  auto prefix = *kvc_build_prefix(meta, payload);
  auto tmp1 = ft.write_tmp(key, 1, prefix, payload);
  ASSERT_TRUE(tmp1.ok());
  ASSERT_TRUE(ft.link_publish(*tmp1, key, prefix.size() + payload.size()).ok());
  auto before = fs::last_write_time(ft.final_path(key));
  auto tmp2 = ft.write_tmp(key, 2, prefix, payload);
  auto out = ft.link_publish(*tmp2, key, prefix.size() + payload.size());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, LinkOutcome::kAdoptedExisting);
  EXPECT_EQ(fs::last_write_time(ft.final_path(key)), before);
  EXPECT_FALSE(fs::exists(*tmp2));
  EXPECT_TRUE(ft.verify(ft.final_path(key), key).ok());
  // Through the cache: the unannounced file is adopted by the next save.
  auto r = cache->save(Tier::kDisk, meta, payload);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(testing::counter(*cache, Counter::kOrphansAdopted), 1u);
  EXPECT_EQ(*cache->load(key), payload);
}

// An adopted file of the same key and size may hold other bytes than the
// adopting writer's (another writer's KV for the same tokens): the published
// row describes the file, so it loads as the file's payload, not as a miss.
TEST(Publish, EexistAdoptedRowDescribesTheFile) {
  TempDir d;
  auto cache = open_cache(file_config(d));
  FileTier& ft = *CacheTestPeer::impl(*cache).files[2];
  auto meta = testing::make_meta(testing::seq_tokens(30));
  auto theirs = testing::random_bytes(3000, 8);
  auto ours = testing::random_bytes(3000, 9);
  CacheKey key = make_key(meta.ns, meta.tokens);
  auto prefix = *kvc_build_prefix(meta, theirs);
  auto tmp = ft.write_tmp(key, 1, prefix, theirs);
  ASSERT_TRUE(tmp.ok());
  ASSERT_TRUE(ft.link_publish(*tmp, key, prefix.size() + theirs.size()).ok());
  ASSERT_TRUE(cache->save(Tier::kDisk, meta, ours).ok());
  EXPECT_EQ(testing::counter(*cache, Counter::kOrphansAdopted), 1u);
  auto loaded = cache->load(key);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(*loaded, theirs);
}

TEST(Publish, EexistReplacesJunk) {
  TempDir d;
  auto cache = open_cache(file_config(d));
  FileTier& ft = *CacheTestPeer::impl(*cache).files[2];
  auto meta = testing::make_meta(testing::seq_tokens(30));
  auto payload = testing::random_bytes(3000, 6);
  CacheKey key = make_key(meta.ns, meta.tokens);
  std::ofstream(ft.final_path(key)) << "junk junk junk";
  auto r = cache->save(Tier::kDisk, meta, payload);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(ft.verify(ft.final_path(key), key).ok());
  EXPECT_EQ(*cache->load(key), payload);
  // A valid file of the same size but a different payload (bad CRC) is junk too.
  auto prefix = *kvc_build_prefix(meta, payload);
  auto tmp = ft.write_tmp(key, 9, prefix, payload);
  {
    std::fstream f(ft.final_path(key), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(prefix.size() + 5));
    f.put('\x42');
  }
  auto out = ft.link_publish(*tmp, key, prefix.size() + payload.size());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, LinkOutcome::kReplacedExisting);
  EXPECT_TRUE(ft.verify(ft.final_path(key), key).ok());
}

TEST(Publish, TtlOrphanAdopt) {
  TempDir d;
  CacheConfig c = file_config(d);
  auto cache = open_cache(c);
  auto& impl = CacheTestPeer::impl(*cache);
  FileTier& ft = *impl.files[2];
  auto meta = testing::make_meta(testing::seq_tokens(40));
  auto payload = testing::random_bytes(4000, 7);
  CacheKey key = make_key(meta.ns, meta.tokens);
  auto prefix = *kvc_build_prefix(meta, payload);
  // A writer reserves, writes, links, then "dies" before mark_published.
  auto token = impl.meta.reserve(key, Tier::kDisk, prefix.size() + payload.size(), 1);
  auto tmp = ft.write_tmp(key, *token, prefix, payload);
  ASSERT_TRUE(impl.meta.mark_post_link(key, *token, ft.final_path(key)));
  ASSERT_TRUE(ft.link_publish(*tmp, key, prefix.size() + payload.size()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  cache->sweep_reservations();
  EXPECT_EQ(testing::counter(*cache, Counter::kOrphansAdopted), 1u);
  EXPECT_EQ(*cache->load(key), payload);
  EXPECT_FALSE(impl.meta.check(key, *token));  // the dead writer's token is gone
}

TEST(Publish, TtlOrphanDrop) {
  TempDir d;
  auto cache = open_cache(file_config(d));
  auto& impl = CacheTestPeer::impl(*cache);
  FileTier& ft = *impl.files[2];
  auto meta = testing::make_meta(testing::seq_tokens(40));
  CacheKey key = make_key(meta.ns, meta.tokens);
  // Post-link with a corrupt file: unlinked and dropped.
  auto token = impl.meta.reserve(key, Tier::kDisk, 100, 1);
  ASSERT_TRUE(impl.meta.mark_post_link(key, *token, ft.final_path(key)));
  std::ofstream(ft.final_path(key)) << "torn";
  // Pre-link: reservation simply dropped.
  CacheKey key2 = key;
  key2[0] ^= 1;
  auto token2 = impl.meta.reserve(key2, Tier::kDisk, 100, 1);
  ASSERT_TRUE(token2.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  cache->sweep_reservations();
  EXPECT_EQ(testing::counter(*cache, Counter::kOrphansDropped), 2u);
  EXPECT_FALSE(fs::exists(ft.final_path(key)));
  EXPECT_FALSE(cache->lookup_exact(key));
  EXPECT_FALSE(impl.meta.reserved(key2));
  // A writer whose reservation was reaped abandons at check_reservation.
  EXPECT_FALSE(impl.meta.check(key2, *token2));
}

TEST(Cache, EvictionQuotaGcAndPins) {
  TempDir d;
  CacheConfig c = file_config(d);
  c.ram_quota_bytes = 50000;
  auto cache = open_cache(c);
  std::vector<CacheKey> keys;
  for (int i = 0; i < 4; ++i) {
    auto k = cache->save(Tier::kRam, testing::make_meta(testing::seq_tokens(10, 100 * i)),
                         testing::random_bytes(15000, i));
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    keys.push_back(*k);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Quota: the 4th save evicted the oldest row.
  EXPECT_EQ(cache->row_count(), 3u);
  EXPECT_FALSE(cache->lookup_exact(keys[0]));
  EXPECT_EQ(testing::counter(*cache, Counter::kEvictions), 1u);
  EXPECT_LE(testing::counter(*cache, Counter::kBytesRam), 50000u);
  EXPECT_EQ(testing::counter(*cache, Counter::kRowsRam), 3u);
  {
    auto lease = cache->checkout(keys[1]);  // pinned: survives gc
    ASSERT_TRUE(lease.ok());
    EXPECT_EQ(cache->gc(), 1u + 0u + 1u);
    EXPECT_TRUE(cache->lookup_exact(keys[1]));
    std::vector<uint8_t> buf(lease->payload_size());
    EXPECT_TRUE(lease->read_payload(buf).ok());
  }
  EXPECT_EQ(cache->gc(), 1u);
  EXPECT_EQ(cache->row_count(), 0u);
  EXPECT_EQ(testing::counter(*cache, Counter::kBytesRam), 0u);
  // Too big for the quota at all.
  EXPECT_EQ(cache
                ->save(Tier::kRam, testing::make_meta(testing::seq_tokens(3)),
                       testing::random_bytes(60000, 1))
                .status()
                .code(),
            ErrorCode::kResourceExhausted);
}

TEST(Cache, EvictBytesRespectsTiers) {
  TempDir d;
  auto cache = open_cache(file_config(d));
  ASSERT_TRUE(cache
                  ->save(Tier::kRam, testing::make_meta(testing::seq_tokens(5, 1)),
                         testing::random_bytes(1000, 1))
                  .ok());
  ASSERT_TRUE(cache
                  ->save(Tier::kDisk, testing::make_meta(testing::seq_tokens(5, 50)),
                         testing::random_bytes(1000, 2))
                  .ok());
  std::vector<Tier> ram_only = {Tier::kRam, Tier::kRamFile};
  auto r = cache->evict_bytes(1ull << 40, ram_only);
  EXPECT_EQ(r.rows, 1u);
  EXPECT_EQ(cache->row_count(), 1u);
  EXPECT_EQ(cache->dump().at(0).tier, Tier::kDisk);
  EXPECT_EQ(cache->evict_bytes(1).rows, 1u);
}

TEST(Cache, AsyncSavesAndBackPressure) {
  TempDir d;
  CacheConfig c = file_config(d);
  c.writer_threads = 1;
  c.writer_queue_depth = 1;
  auto cache = open_cache(c);
  // Payloads made up front: the 50 saves are then queued back to back, far faster than
  // one writer publishes them (each publish syncs a file), even in a slow build.
  std::vector<std::vector<uint8_t>> payloads;
  for (int i = 0; i < 50; ++i) payloads.push_back(testing::random_bytes(200000, i));
  int accepted = 0, dropped = 0;
  for (int i = 0; i < 50; ++i) {
    bool ok = cache->save_async(Tier::kDisk, testing::make_meta(testing::seq_tokens(8, 10 * i)),
                                std::move(payloads[static_cast<size_t>(i)]));
    ok ? ++accepted : ++dropped;
  }
  cache->wait_idle();
  EXPECT_GT(accepted, 0);
  EXPECT_GT(dropped, 0);
  EXPECT_EQ(testing::counter(*cache, Counter::kSavesDropped), static_cast<uint64_t>(dropped));
  EXPECT_EQ(cache->row_count(), static_cast<size_t>(accepted));
  for (const auto& w : CacheTestPeer::impl(*cache).writers) {
    if (w) {
      EXPECT_EQ(w->slots.in_use(), 0u);  // every slot released
    }
  }
}

TEST(Cache, CountersSnapshotAndReset) {
  TempDir d;
  auto cache = open_cache(file_config(d));
  ASSERT_TRUE(cache
                  ->save(Tier::kRam, testing::make_meta(testing::seq_tokens(5)),
                         testing::random_bytes(10, 1))
                  .ok());
  CacheKey missing{};
  EXPECT_FALSE(cache->lookup_exact(missing));
  auto snap = cache->counters_snapshot();
  std::map<std::string, uint64_t> m(snap.begin(), snap.end());
  for (const char* name : {"hits_exact",     "hits_resume",       "hits_longest_prefix",
                           "misses",         "saves_cold",        "saves_continued",
                           "saves_finish",   "saves_evict",       "saves_shutdown",
                           "saves_dropped",  "evictions",         "bytes_ram",
                           "bytes_ram_file", "bytes_disk",        "pack_total_ns",
                           "load_total_ns",  "longest_prefix_ns", "longest_prefix_probes",
                           "corrupt_files",  "duplicate_dropped"}) {
    EXPECT_TRUE(m.count(name)) << name;
  }
  EXPECT_EQ(m["misses"], 1u);
  EXPECT_EQ(m["saves_cold"], 1u);
  EXPECT_GT(m["bytes_ram"], 0u);
  cache->reset_counters();
  EXPECT_EQ(testing::counter(*cache, Counter::kMisses), 0u);
  EXPECT_GT(testing::counter(*cache, Counter::kBytesRam), 0u);  // gauge kept
}

TEST(Scheduler, CallbackPressureEvictsRamTiersOnly) {
  TempDir d;
  auto cache = open_cache(file_config(d));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(cache
                    ->save(Tier::kRam, testing::make_meta(testing::seq_tokens(5, 10 * i)),
                           testing::random_bytes(4096, i))
                    .ok());
  }
  ASSERT_TRUE(cache
                  ->save(Tier::kDisk, testing::make_meta(testing::seq_tokens(5, 500)),
                         testing::random_bytes(4096, 9))
                  .ok());
  EXPECT_FALSE(cache->scheduler_status().enabled);  // off by default
  EXPECT_EQ(cache->scheduler_force_check().outcome, ForceCheckResult::Outcome::kSkippedDisabled);
  std::atomic<uint64_t> used{50};
  SchedulerConfig sc;
  sc.enabled = true;
  sc.source = PressureSource::kCallback;
  sc.callback = [&] { return PressureReading{used.load(), 100}; };
  sc.interval_ms = 3600000;
  sc.min_evict_bytes = 1;
  ASSERT_TRUE(cache->scheduler_configure(sc).ok());
  EXPECT_EQ(cache->scheduler_force_check().outcome,
            ForceCheckResult::Outcome::kSkippedBelowWatermark);
  used = 90;  // >= 0.85: evict (90 - 75) bytes -> one RAM row
  auto r = cache->scheduler_force_check();
  EXPECT_EQ(r.outcome, ForceCheckResult::Outcome::kEvicted);
  EXPECT_EQ(r.rows, 1u);
  EXPECT_EQ(cache->scheduler_status().last_used, 90u);
  sc.min_evict_bytes = 1ull << 40;
  ASSERT_TRUE(cache->scheduler_configure(sc).ok());
  r = cache->scheduler_force_check();
  EXPECT_EQ(r.rows, 2u);  // all RAM rows; the disk row stays
  EXPECT_EQ(cache->row_count(), 1u);
  EXPECT_EQ(cache->scheduler_force_check().outcome,
            ForceCheckResult::Outcome::kSkippedNothingToEvict);
  cache->scheduler_enable(false);
  EXPECT_FALSE(cache->scheduler_status().enabled);
}

TEST(Scheduler, SourcesReportSaneReadings) {
  auto noop = sample_pressure(PressureSource::kNoop);
  EXPECT_EQ(noop.used, 0u);
  EXPECT_EQ(noop.total, 1u);
  auto sys = sample_pressure(PressureSource::kSystem);
  EXPECT_GT(sys.total, 1u);
  EXPECT_LE(sys.used, sys.total);
  auto gpu = sample_pressure(PressureSource::kNvidiaSmi);  // {0,1} without a GPU
  EXPECT_LE(gpu.used, gpu.total);
  SchedulerConfig bad;
  bad.source = PressureSource::kCallback;
  EXPECT_FALSE(validate_scheduler_config(bad).ok());
}

}  // namespace
}  // namespace hearth::cache
